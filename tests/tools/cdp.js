// cdp.js -- drives Debian's headless Chromium over the DevTools protocol
// for the report tests, with nothing but Node's standard library: Chromium
// runs with --remote-debugging-pipe, reading NUL-terminated JSON messages
// on fd 3 and writing its own on fd 4.  Collects every script error,
// console error and dialog (alert, confirm: answered at once) of the page.
"use strict";
const { spawn } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");

// Starts Chromium; resolves to a browser object, rejects (err.launch set)
// when it cannot be started at all.
function launch(exe, timeoutMs) {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cpuprof-chromium-"));
	const args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--no-default-browser-check",
		"--disable-extensions", "--mute-audio", "--hide-scrollbars", "--remote-debugging-pipe",
		"--user-data-dir=" + dir, "--window-size=1200,800", "about:blank"];
	// Its own process group, so that close() can end Chromium's helpers.
	const proc = spawn(exe, args, { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"], detached: true });
	let stderr = "";
	proc.stdio[2].on("data", (d) => { stderr = (stderr + d).slice(-4000); });
	const w = proc.stdio[3], r = proc.stdio[4];
	let id = 0, buf = "";
	const pending = new Map(), listeners = [];
	const b = {
		proc, dir,
		errors: [],
		send(method, params, sessionId) {
			const m = { id: ++id, method, params: params || {} };
			if (sessionId)
				m.sessionId = sessionId;
			w.write(JSON.stringify(m) + "\0");
			return new Promise((res, rej) => pending.set(m.id, { res, rej, method }));
		},
		on(fn) { listeners.push(fn); },
		// Asks Chromium to quit, waits for it (10 s at most), then ends
		// whatever is left of its process group and removes its profile.
		async close() {
			const exited = new Promise((res) => {
				if (proc.exitCode !== null || proc.signalCode !== null)
					res();
				proc.on("exit", res);
			});
			try { w.write(JSON.stringify({ id: ++id, method: "Browser.close", params: {} }) + "\0"); } catch (e) { /* gone */ }
			await Promise.race([exited, new Promise((res) => setTimeout(res, 10000))]);
			try { process.kill(-proc.pid, "SIGKILL"); } catch (e) { /* all gone */ }
			try { fs.rmSync(dir, { recursive: true, force: true }); } catch (e) { /* busy */ }
		},
	};
	r.on("data", (d) => {
		buf += d;
		let i;
		while ((i = buf.indexOf("\0")) >= 0) {
			const m = JSON.parse(buf.slice(0, i));
			buf = buf.slice(i + 1);
			if (m.id && pending.has(m.id)) {
				const p = pending.get(m.id);
				pending.delete(m.id);
				if (m.error)
					p.rej(new Error(p.method + ": " + JSON.stringify(m.error)));
				else
					p.res(m.result);
			} else {
				listeners.forEach((fn) => fn(m));
			}
		}
	});
	return new Promise((resolve, reject) => {
		const t = setTimeout(() => {
			const e = new Error("Chromium did not answer within " + timeoutMs + " ms: " + stderr);
			e.launch = true;
			proc.kill("SIGKILL");
			reject(e);
		}, timeoutMs);
		proc.on("error", (e) => { clearTimeout(t); e.launch = true; reject(e); });
		proc.on("exit", (code) => {
			clearTimeout(t);
			const e = new Error("Chromium exited (" + code + "): " + stderr);
			e.launch = true;
			reject(e);
		});
		b.send("Browser.getVersion").then((v) => { clearTimeout(t); b.version = v.product; resolve(b); }, reject);
	});
}

// Opens url in a new tab; resolves to a page object once it has loaded.
async function open(b, url, timeoutMs) {
	const t = await b.send("Target.createTarget", { url: "about:blank" });
	const a = await b.send("Target.attachToTarget", { targetId: t.targetId, flatten: true });
	const s = a.sessionId;
	let loaded;
	const done = new Promise((res) => { loaded = res; });
	b.on((m) => {
		if (m.sessionId !== s)
			return;
		if (m.method === "Runtime.exceptionThrown")
			b.errors.push("exception: " + JSON.stringify(m.params.exceptionDetails).slice(0, 2000));
		else if (m.method === "Runtime.consoleAPICalled" && (m.params.type === "error" || m.params.type === "assert"))
			b.errors.push("console." + m.params.type + ": " + JSON.stringify(m.params.args).slice(0, 2000));
		else if (m.method === "Log.entryAdded" && m.params.entry.level === "error")
			b.errors.push("log: " + m.params.entry.text + " " + (m.params.entry.url || ""));
		else if (m.method === "Page.loadEventFired")
			loaded();
		else if (m.method === "Page.javascriptDialogOpening") {
			// An alert() is how a page may say it failed (speedscope's
			// import does); it would block the page until answered.
			b.errors.push("dialog: " + m.params.type + ": " + m.params.message);
			b.send("Page.handleJavaScriptDialog", { accept: true }, s).catch(() => {});
		}
	});
	await b.send("Runtime.enable", {}, s);
	await b.send("Log.enable", {}, s);
	await b.send("Page.enable", {}, s);
	await b.send("Emulation.setDeviceMetricsOverride", { width: 1200, height: 800, deviceScaleFactor: 1, mobile: false }, s);
	await b.send("Page.navigate", { url }, s);
	await Promise.race([done, new Promise((_, rej) => setTimeout(() => rej(new Error("page did not load")), timeoutMs))]);
	const page = {
		session: s,
		// The value of a JavaScript expression in the page.
		async eval(expr) {
			const r = await b.send("Runtime.evaluate", { expression: expr, returnByValue: true, awaitPromise: true }, s);
			if (r.exceptionDetails)
				throw new Error("evaluating " + expr + ": " + JSON.stringify(r.exceptionDetails).slice(0, 1000));
			return r.result.value;
		},
		async mouse(type, x, y) {
			await b.send("Input.dispatchMouseEvent", { type, x, y, button: type === "mouseMoved" ? "none" : "left",
				clickCount: type === "mouseMoved" ? 0 : 1 }, s);
		},
		async click(x, y) {
			await page.mouse("mouseMoved", x, y);
			await page.mouse("mousePressed", x, y);
			await page.mouse("mouseReleased", x, y);
		},
		// A key pressed and released ("Escape").
		async key(name) {
			const code = { Escape: 27, Enter: 13 }[name] || 0;
			for (const type of ["keyDown", "keyUp"])
				await b.send("Input.dispatchKeyEvent", { type, key: name, code: name, windowsVirtualKeyCode: code }, s);
		},
		// A drag with the left button from (x0, y) to (x1, y), in steps.
		async drag(x0, x1, y) {
			await page.mouse("mouseMoved", x0, y);
			await page.mouse("mousePressed", x0, y);
			for (let k = 1; k <= 8; k++)
				await b.send("Input.dispatchMouseEvent", { type: "mouseMoved", x: x0 + (x1 - x0) * k / 8, y,
					button: "left", buttons: 1 }, s);
			await page.mouse("mouseReleased", x1, y);
		},
		async type(text) {
			await b.send("Input.insertText", { text }, s);
		},
		async screenshot(file) {
			const r = await b.send("Page.captureScreenshot", { format: "png", captureBeyondViewport: true }, s);
			fs.writeFileSync(file, Buffer.from(r.data, "base64"));
		},
	};
	return page;
}

module.exports = { launch, open };
