// html_check.js -- checks pages of `cpuprof report --format html` in
// headless Chromium (tests/tools/cdp.js), from inside the page after its script
// ran, through the page's window.cpuprofFlame and real input events.
// Prints "ok: ..." per check; exits 1 on the first failure, 77 when
// Chromium cannot be started here.
//
// Usage: node html_check.js [--work PAGE PNG TOTAL HOTSHARE SEARCHSHARE]
//        [--interval PAGE NAME LO HI] [--diff PAGE GROWN SHRUNK SAME PNG]
//        [--branches PAGE] [--hostile PAGE NAMES.json] [--empty PAGE]
//        [--groups PAGE] [--values PAGE] [--kernel PAGE NAME]
//        [--shot PAGE PNG]
"use strict";
const cdp = require("./cdp.js");
const fs = require("fs");
const path = require("path");

const TIMEOUT = 60000;
class Failure extends Error {}
function fail(msg) {
	throw new Failure(msg);
}
function check(cond, msg) {
	if (!cond)
		fail(msg);
	console.log("ok: " + msg);
}
const url = (f) => "file://" + path.resolve(f);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function openPage(b, file) {
	const p = await cdp.open(b, url(file), TIMEOUT);
	for (let i = 0; i < 600; i++) {
		if (await p.eval("!!(window.cpuprofFlame && window.cpuprofFlame.ready)"))
			return p;
		await sleep(100);
	}
	fail(file + ": the page's script never became ready; errors: " + b.errors.join("; "));
}

// The page's frames, as the page laid them out, of name `name`.
async function drawnNamed(p, name) {
	return (await p.eval("cpuprofFlame.drawn()")).filter((d) => d.name === name);
}

async function checkWork(b, file, png, total, hotShare, searchShare) {
	const p = await openPage(b, file);
	const F = "cpuprofFlame";
	const pageTotal = await p.eval(F + ".total()");
	check(pageTotal === total && (await p.eval(F + ".dataTotal")) === total,
		"the root's total " + pageTotal + " is the profile's total " + total);
	// Down the widest child from the root to main, then on to a leaf.
	// Functions inlined into the leaf (spin) end the chain below it: the
	// leaf is the last function that is not inlined.
	const chain = await p.eval(`(() => {
		const A = ${F}; let k = 0, leaf = 0; const names = [];
		for (;;) {
			const kids = A.children(k);
			if (!kids.length) break;
			k = kids.reduce((a, c) => (A.nodeTotal(c) > A.nodeTotal(a) ? c : a));
			if (A.kind(k) === "inlined" && names.length)
				break;
			names.push(A.name(k));
			leaf = k;
		}
		return { names, leaf, share: A.nodeTotal(leaf) / A.total() };
	})()`);
	const m = chain.names.indexOf("main");
	check(m >= 0, "main is on the widest chain: " + chain.names.join(" > "));
	check(chain.names[chain.names.length - 1] === "hot_leaf",
		"the widest frame at the end of main's chain is hot_leaf");
	check(Math.abs(chain.share - hotShare) < 0.001,
		"hot_leaf's share in the page " + chain.share.toFixed(4) + " is its share in the profile " + hotShare.toFixed(4));
	const before = await p.eval(F + ".drawn().length");
	check((await drawnNamed(p, "warm_leaf")).length === 1 && (await drawnNamed(p, "hot_leaf")).length === 1,
		"hot_leaf and warm_leaf are drawn (" + before + " frames drawn)");

	// Hover: the tooltip names the frame and its total.
	const cr = await p.eval(F + ".canvasRect()");
	const hot = (await drawnNamed(p, "hot_leaf"))[0];
	await p.mouse("mouseMoved", cr.x + hot.x + hot.w / 2, cr.y + hot.y + hot.h / 2);
	const tip = await p.eval("document.getElementById('tip').style.display === 'block' ? document.getElementById('tip').textContent : ''");
	check(/^hot_leaf\n/.test(tip) && /total: .*\(\d+\.\d\d%, 95% interval [\d.]+\u2013[\d.]+%\)/.test(tip) &&
		/self: /.test(tip), "hovering hot_leaf shows its name, total (with its interval) and self: " + JSON.stringify(tip));

	// Search, typed into the box.
	await p.eval("document.getElementById('search').focus()");
	await p.type("hot_");
	await sleep(200);
	const drawn = await p.eval(F + ".drawn()");
	const wrong = drawn.filter((d) => d.id !== 0 && d.matched !== d.name.includes("hot_"));
	check(drawn.some((d) => d.matched) && wrong.length === 0,
		"search 'hot_' highlights exactly the frames whose name has hot_ (" +
		drawn.filter((d) => d.matched).map((d) => d.name).join(", ") + ")");
	const share = await p.eval(F + ".matchedShare()");
	check(Math.abs(share - searchShare) < 0.001, "search reports share " + share.toFixed(4) +
		", the profile's " + searchShare.toFixed(4) + ": " + (await p.eval(F + ".matchedText()")));
	check((await p.eval(F + ".matchedText()")).includes((100 * searchShare).toFixed(2) + "%"),
		"the page shows the matched share as a percentage");
	await p.eval("(() => { const s = document.getElementById('search'); s.value = ''; s.dispatchEvent(new Event('input')); })()");

	// Zoom: a real click on warm_top.
	const warm = (await drawnNamed(p, "warm_top"))[0];
	check(warm !== undefined, "warm_top is drawn");
	await p.click(cr.x + warm.x + Math.min(warm.w / 2, 20), cr.y + warm.y + warm.h / 2);
	await sleep(200);
	const z = await p.eval(F + ".zoomed()");
	check(z === warm.id, "clicking warm_top zooms into it");
	const after = await p.eval(F + ".drawn()");
	const wz = after.filter((d) => d.name === "warm_top")[0];
	// warm_leaf holds nearly all of warm_top, but not always all: a
	// sample may stop in warm_top or warm_mid themselves (under qemu-user
	// one run in a few drew warm_leaf narrower than the width less 30 px).
	check(!after.some((d) => d.name === "hot_leaf") && wz && Math.abs(wz.w - cr.w) < 30 &&
		after.some((d) => d.name === "warm_leaf" && d.w > cr.w / 2),
		"after the zoom hot_leaf is not drawn, warm_top fills the width and warm_leaf most of it (" +
		after.map((d) => d.name + ":" + Math.round(d.w)).join(" ") + "; width " + Math.round(cr.w) + ")");
	await p.click(cr.x + wz.x + 10, cr.y + wz.y + wz.h / 2);
	await sleep(200);
	check((await p.eval(F + ".zoomed()")) !== z && (await drawnNamed(p, "hot_leaf")).length === 1,
		"clicking the zoomed frame zooms back out");
	// Compared with main, not with the flame's own y: the flame draws
	// from the bottom of a canvas as tall as the deepest stack, so one
	// deep stray stack can put hot_leaf low in both orientations.
	const mainFlame = (await drawnNamed(p, "main"))[0];
	const hotFlame = (await drawnNamed(p, "hot_leaf"))[0];
	await p.eval("document.getElementById('orient').click()");
	const mainIcicle = (await drawnNamed(p, "main"))[0];
	const hotIcicle = (await drawnNamed(p, "hot_leaf"))[0];
	check(hotFlame.y < mainFlame.y && hotIcicle.y > mainIcicle.y,
		"the icicle toggle puts the root at the top and the leaves below (flame: main " + mainFlame.y +
		", hot_leaf " + hotFlame.y + "; icicle: main " + mainIcicle.y + ", hot_leaf " + hotIcicle.y + ")");
	await p.eval("document.getElementById('orient').click()");
	await p.screenshot(png);
	check(fs.statSync(png).size > 10000, "screenshot " + png);
}

async function checkHostile(b, file, namesFile) {
	const want = JSON.parse(fs.readFileSync(namesFile, "utf8"));
	const p = await openPage(b, file);
	const names = await p.eval(`(() => { const A = cpuprofFlame, out = [], st = [0];
		while (st.length) { const k = st.pop(); if (k) out.push(A.name(k)); st.push(...A.children(k)); }
		return out; })()`);
	for (const w of want)
		check(names.includes(w), "the page names " + JSON.stringify(w) + " as text");
	check((await p.eval("typeof window.pwned")) === "undefined", "no name ran as script");
	check((await p.eval("document.scripts.length")) === 2 && (await p.eval("document.images.length")) === 0,
		"the page still has exactly its two scripts and no element from a name");
	const header = await p.eval("document.querySelector('header').textContent");
	check(header.includes("</script><b>x</b>"), "a hostile comment shows as text in the header");
	const kinds = await p.eval(`(() => { const A = cpuprofFlame, out = {}, st = [0];
		while (st.length) { const k = st.pop(); if (k) out[A.name(k)] = A.kind(k); st.push(...A.children(k)); }
		return out; })()`);
	check(kinds["inl_fn"] === "inlined" && kinds["[lost]"] === "lost" && kinds["[truncated]"] === "truncated" &&
		kinds["[unsampled: after each thread's last sample]"] === "unsampled" &&
		kinds["[profiler: cpuprof's drain thread]"] === "profiler" && kinds["outer_fn"] === "function",
		"inlined, [lost], [truncated], [unsampled], [profiler] frames have kinds of their own");
}

// t_report_html.sh's profile of leaf under several chains (main > a >
// leaf 300, main > b > mid > leaf 200, main > b > leaf > leaf 100, main >
// other 400): a frame per path, each with its path's total, and a search
// for leaf covers 60%: each sample once, however many of its frames match.
async function checkBranches(b, file) {
	const p = await openPage(b, file);
	const F = "cpuprofFlame";
	const paths = await p.eval(`(() => { const A = ${F}, out = {}, st = [[0, ""]];
		while (st.length) { const [k, path] = st.pop();
			if (k) out[path] = A.nodeTotal(k);
			for (const c of A.children(k)) st.push([c, (path ? path + ";" : "") + A.name(c)]); }
		return out; })()`);
	const want = { "main": 1000, "main;a": 300, "main;a;leaf": 300, "main;b": 300, "main;b;mid": 200,
		"main;b;mid;leaf": 200, "main;b;leaf": 100, "main;b;leaf;leaf": 100, "main;other": 400 };
	check(JSON.stringify(Object.keys(paths).sort()) === JSON.stringify(Object.keys(want).sort()) &&
		Object.keys(want).every((k) => paths[k] === want[k]),
		"each path is a frame with its own total: " + JSON.stringify(paths));
	await p.eval("(() => { const s = document.getElementById('search'); s.value = '^leaf$'; s.dispatchEvent(new Event('input')); })()");
	const share = await p.eval(F + ".matchedShare()");
	check(Math.abs(share - 0.6) < 1e-9 && (await p.eval(F + ".matchedText()")).includes("60.00%"),
		"a search for leaf covers each sample once: " + share + " (" + (await p.eval(F + ".matchedText()")) + ")");
}

// The tooltip of the widest frame named `name` gives its share's 95%
// interval as `report --intervals` does: lo-hi in percent.
async function checkInterval(b, file, name, lo, hi) {
	const p = await openPage(b, file);
	const tip = await p.eval(`(() => { const A = cpuprofFlame; let best = -1, st = [0];
		while (st.length) { const k = st.pop(); if (k && A.name(k) === ${JSON.stringify(name)} &&
			(best < 0 || A.nodeTotal(k) > A.nodeTotal(best))) best = k; st.push(...A.children(k)); }
		return best < 0 ? "" : A.describe(best); })()`);
	check(tip.includes("95% interval " + lo + "\u2013" + hi + "%"),
		"the tooltip of " + name + " gives report --intervals' interval " + lo + "-" + hi + ": " + JSON.stringify(tip));
}

// A differential page (cpuprof diff --format html) of a pair where
// `grown` grew and `shrunk` shrank beyond the noise and `same` did not:
// their verdicts, colours as drawn, tooltip and the header's list.
async function checkDiff(b, file, grown, shrunk, same, png) {
	const p = await openPage(b, file);
	const F = "cpuprofFlame";
	const node = (name) => p.eval(`(() => { const A = ${F}; const st = [0];
		while (st.length) { const k = st.pop(); if (k && A.name(k) === ${JSON.stringify(name)}) return k; st.push(...A.children(k)); }
		return -1; })()`);
	const g = await node(grown), s = await node(shrunk), m = await node(same);
	check(g > 0 && s > 0 && m > 0, "the page has " + grown + ", " + shrunk + " and " + same);
	check((await p.eval(`${F}.status(${g})`)) === 1 && (await p.eval(`${F}.status(${s})`)) === -1 &&
		(await p.eval(`${F}.status(${m})`)) === 0, grown + " grew, " + shrunk + " shrank, " + same + " within noise");
	// The colour of a frame as drawn: a pixel of the canvas inside it.
	const pixel = async (k) => {
		const d = (await p.eval(F + ".drawn()")).filter((x) => x.id === k)[0];
		if (!d)
			fail("frame " + k + " is not drawn");
		return p.eval(`(() => { const c = document.getElementById("canvas"), r = window.devicePixelRatio || 1;
			return Array.from(c.getContext("2d").getImageData(Math.round((${d.x} + 2) * r), Math.round((${d.y} + 2) * r), 1, 1).data); })()`);
	};
	const pg = await pixel(g), ps = await pixel(s), pm = await pixel(m);
	check(pg[0] > pg[1] + 40 && pg[0] > pg[2] + 40, grown + " is drawn red: rgb " + pg.slice(0, 3).join(","));
	check(ps[2] > ps[0] + 40 && ps[2] > ps[1] + 20, shrunk + " is drawn blue: rgb " + ps.slice(0, 3).join(","));
	check(Math.max(pm[0], pm[1], pm[2]) - Math.min(pm[0], pm[1], pm[2]) < 16, same + " is drawn grey: rgb " + pm.slice(0, 3).join(","));
	const cr = await p.eval(F + ".canvasRect()");
	const d = (await p.eval(F + ".drawn()")).filter((x) => x.id === g)[0];
	await p.mouse("mouseMoved", cr.x + d.x + d.w / 2, cr.y + d.y + d.h / 2);
	const tip = await p.eval("document.getElementById('tip').style.display === 'block' ? document.getElementById('tip').textContent : ''");
	check(tip.startsWith(grown + "\n") && /NEW: +total .*95% interval/.test(tip) && /BASE: total .*95% interval/.test(tip) &&
		/grew beyond the noise/.test(tip), "hovering " + grown + " shows both shares and the verdict: " + JSON.stringify(tip));
	// A path that changed beyond the noise has its Holm's p-value, at
	// most alpha (0.01), not the 1 of paths never tested.
	const hp = /, p (\S+) \(Holm\)/.exec(tip);
	check(hp && parseFloat(hp[1]) <= 0.01, "hovering " + grown + " shows its Holm's p-value, at most alpha: " + JSON.stringify(tip));
	// BASE's share of it: grow_me's 40%, drawn from samples (within 35-45%).
	const bs = /BASE: total [^(]*\(([0-9.]+)%/.exec(tip);
	check(bs && parseFloat(bs[1]) > 35 && parseFloat(bs[1]) < 45, "hovering " + grown + " shows BASE's share, about 40%: " + JSON.stringify(tip));
	const header = await p.eval("document.getElementById('changes').textContent");
	check(header.includes("grew:   " + grown + " (flat)") && header.includes("shrank: " + shrunk + " (flat)"),
		"the header lists the functions that changed: " + JSON.stringify(header));
	await p.screenshot(png);
}

async function checkEmpty(b, file) {
	const p = await openPage(b, file);
	check(await p.eval("!document.getElementById('empty').hidden && document.getElementById('empty').textContent.includes('no samples')"),
		"an empty profile's page says it has no samples");
}

async function checkGroups(b, file) {
	const p = await openPage(b, file);
	const F = "cpuprofFlame";
	const rootNames = () => p.eval(`${F}.children(0).map((k) => ${F}.name(k)).sort().join("|")`);
	check((await rootNames()) === "main", "the whole-profile view merges the threads: " + await rootNames());
	check((await p.eval("document.getElementById('view').options.length")) === 3, "the view menu offers 3 views");
	const setView = (v) => p.eval(`(() => { const s = document.getElementById('view'); s.value = '${v}'; s.dispatchEvent(new Event('change')); })()`);
	await setView("process");
	check((await rootNames()) === "app (pid 10)|helper (pid 11)", "by process: " + await rootNames());
	await setView("thread");
	const threads = await p.eval(`${F}.children(${F}.children(0)[0]).map((k) => ${F}.name(k)).sort().join("|")`);
	check(threads === "app (tid 10)|worker-1 (tid 12)", "by thread, app's threads: " + threads);
	check((await p.eval(F + ".total()")) === 700, "every view keeps the total");
}

// A profile of off-CPU time (t_report_html.sh's values.txt): the Value
// menu offers wall (the profile's default), cpu and off_cpu, and each
// redraws the same stacks with that value.
async function checkValues(b, file) {
	const p = await openPage(b, file);
	const F = "cpuprofFlame";
	const node = (name) => p.eval(`(() => { const q = [0]; while (q.length) { const k = q.pop();
		if (k && ${F}.name(k) === ${JSON.stringify(name)}) return k; q.push(...${F}.children(k)); } return -1; })()`);
	check((await p.eval(`${F}.values().join("|")`)) === "wall|cpu|off_cpu", "the menu offers wall, cpu and off_cpu: " +
		await p.eval(`${F}.values().join("|")`));
	check(!(await p.eval("document.getElementById('valuebox').hidden")), "the Value menu is shown");
	check((await p.eval(F + ".total()")) === 450, "wall, the default: the total is CPU and off-CPU, 450");
	await p.eval(`${F}.setValue("off_cpu")`);
	check((await p.eval(F + ".total()")) === 350, "off_cpu: the total is 350");
	const w = await node("[waiting to run]");
	check(w > 0 && (await p.eval(`${F}.kind(${w})`)) === "waiting" && (await p.eval(`${F}.nodeTotal(${w})`)) === 50,
		"[waiting to run] is a frame of its own kind under compute, 50");
	check((await p.eval(`document.getElementById('totals').textContent`)).includes("Total off-CPU: 350ns"),
		"the header says what is counted: " + await p.eval(`document.getElementById('totals').textContent`));
	await p.eval(`(() => { const s = document.getElementById('value'); s.value = '1'; s.dispatchEvent(new Event('change')); })()`);
	check((await p.eval(F + ".value()")) === "cpu" && (await p.eval(F + ".total()")) === 100,
		"cpu, picked in the menu: the total is 100");
	check((await p.eval(`${F}.nodeTotal(${await node("nanosleep")})`)) === 0, "nanosleep holds no CPU");
}

// A page of record --kernel: the kernel function `name` is a frame of
// kind kernel, in the kernel's pink (not a function's orange, nor a
// JIT's green), its
// tooltip says so, and the legend names the kernel.
async function checkKernel(b, file, name) {
	const p = await openPage(b, file);
	const got = await p.eval(`(() => {
		const A = cpuprofFlame, st = [0];
		let user = null;
		while (st.length) {
			const k = st.pop();
			if (k && A.name(k) === ${JSON.stringify(name)})
				return { kind: A.kind(k), fill: A.fill(k), tip: A.describe(k), user };
			if (k && A.kind(k) === "function")
				user = A.fill(k);
			st.push(...A.children(k));
		}
		return null;
	})()`);
	check(got !== null, file + ": a frame " + name);
	check(got.kind === "kernel", name + " is of kind kernel (" + got.kind + ")");
	const hue = Number((/^hsl\((\d+),/.exec(got.fill) || [])[1]);
	check(hue >= 318 && hue <= 343, name + " is drawn in the kernel's pink (" + got.fill + "), a function in " + got.user);
	check(got.tip.includes("(kernel)"), name + "'s tooltip says it is the kernel's");
	check((await p.eval("document.getElementById('legend').textContent")).includes("kernel"), "the legend names the kernel");
}

(async () => {
	const exe = process.env.CHROMIUM || "/usr/bin/chromium";
	let b;
	try {
		b = await cdp.launch(exe, TIMEOUT);
	} catch (e) {
		console.log("skip: Chromium cannot run here: " + e.message.split("\n")[0]);
		process.exit(77);
	}
	console.log("# " + b.version);
	const a = process.argv.slice(2);
	let rc = 0;
	try {
		for (let i = 0; i < a.length;) {
			const opt = a[i++];
			if (opt === "--work")
				await checkWork(b, a[i++], a[i++], Number(a[i++]), Number(a[i++]), Number(a[i++]));
			else if (opt === "--branches")
				await checkBranches(b, a[i++]);
			else if (opt === "--hostile")
				await checkHostile(b, a[i++], a[i++]);
			else if (opt === "--interval")
				await checkInterval(b, a[i++], a[i++], a[i++], a[i++]);
			else if (opt === "--diff")
				await checkDiff(b, a[i++], a[i++], a[i++], a[i++], a[i++]);
			else if (opt === "--empty")
				await checkEmpty(b, a[i++]);
			else if (opt === "--groups")
				await checkGroups(b, a[i++]);
			else if (opt === "--values")
				await checkValues(b, a[i++]);
			else if (opt === "--kernel")
				await checkKernel(b, a[i++], a[i++]);
			else if (opt === "--shot") {
				const p = await openPage(b, a[i++]);
				await p.screenshot(a[i++]);
			} else {
				fail("unknown option " + opt);
			}
		}
		check(b.errors.length === 0, "no script error was logged" + (b.errors.length ? ": " + b.errors.join("; ") : ""));
	} catch (e) {
		console.error("FAIL: " + (e instanceof Failure ? e.message : e.stack || String(e)));
		rc = 1;
	} finally {
		await b.close();
	}
	process.exit(rc);
})();
