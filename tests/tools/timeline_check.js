// timeline_check.js -- checks the timeline of `cpuprof report --format
// html` pages in headless Chromium (tests/tools/cdp.js), through the page's
// window.cpuprofFlame and real mouse and key events, against `cpuprof
// report --from --to`, the C code that selects a range of a profile.
// Prints "ok: ..." per check; exits 1 on the first failure, 77 when
// Chromium cannot be started here.
//
// Usage: node timeline_check.js CPUPROF
//        [--phases PAGE PROFILE MS PNG_PREFIX]   work_phases' page
//        [--synthetic PAGE PROFILE]              tests/e2e/t_report_timeline.sh's
//                                                hand-made profile
//        [--none PAGE TEXT]                      a page without a timeline:
//                                                TEXT says why ("" for none)
// CPUPROF is run (under $EMU where set) for the totals of a range.
"use strict";
const cdp = require("./cdp.js");
const path = require("path");
const { execFileSync } = require("child_process");

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
const F = "cpuprofFlame", TLS = "cpuprofFlame.timeline";
let CPUPROF = "";

async function openPage(b, file) {
	const p = await cdp.open(b, url(file), TIMEOUT);
	for (let i = 0; i < 600; i++) {
		if (await p.eval("!!(window.cpuprofFlame && window.cpuprofFlame.ready)"))
			return p;
		await sleep(100);
	}
	fail(file + ": the page's script never became ready; errors: " + b.errors.join("; "));
}

// The total of `value` in [a, b) ns of PROFILE as `cpuprof report --from
// --to` counts it: the sum of its folded stacks.
function reportTotal(profile, value, a, b) {
	const args = ["report", "--format", "folded", "--value", value, "--from", (a / 1e9).toFixed(9) + "s",
		"--to", (b / 1e9).toFixed(9) + "s", profile];
	const emu = (process.env.EMU || "").split(" ").filter((w) => w);
	const cmd = emu.length ? emu[0] : CPUPROF, rest = emu.length ? emu.slice(1).concat([CPUPROF], args) : args;
	const out = execFileSync(cmd, rest, { encoding: "utf8" });
	return out.split("\n").filter((l) => l).reduce((t, l) => t + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
}

// A drag with the mouse across the lanes from fraction f0 to f1 of the
// plot, at the height of the first lane.
async function dragLanes(p, f0, f1) {
	const g = await p.eval(TLS + ".geometry()"), lane = (await p.eval(TLS + ".lanes()"))[0];
	const y = g.canvasTop + lane.y + lane.h / 2, w = g.right - g.left;
	await p.drag(g.left + w * f0, g.left + w * f1, y);
}

async function clickElement(p, id) {
	const r = await p.eval(`(() => { const r = document.getElementById(${JSON.stringify(id)}).getBoundingClientRect();
		return [r.left + r.width / 2, r.top + r.height / 2]; })()`);
	await p.click(r[0], r[1]);
}

// Clicks the widest frame drawn of function `name` in the flame graph.
async function clickFrame(p, name) {
	const d = (await p.eval(F + ".drawn()")).filter((x) => x.name === name).sort((x, y) => y.w - x.w)[0];
	if (!d)
		fail("no frame " + name + " is drawn");
	const cr = await p.eval(F + ".canvasRect()");
	await p.click(cr.x + d.x + Math.min(d.w / 2, 20), cr.y + d.y + d.h / 2);
}

// The flat value of function `name` in the top table (0 if not listed).
async function flat(p, name) {
	const r = (await p.eval(F + ".top()")).find((x) => x.name === name);
	return r ? r.flat : 0;
}

// The page's total is report's for the range it shows.
async function sameAsReport(p, profile, what) {
	const r = await p.eval(TLS + ".range()"), value = await p.eval(F + ".value()");
	const page = await p.eval(F + ".total()"), cli = reportTotal(profile, value, r[0], r[1]);
	check(Math.abs(page - cli) <= 1e-6 * cli + 1000, what + ": the page's " + value + " in " + (r[0] / 1e9).toFixed(4) +
		"s to " + (r[1] / 1e9).toFixed(4) + "s is report --from --to's: " + page + " ns, " + cli + " ns");
}

// The page of work_phases: a lane per thread, named; the first half of
// the lanes is phase_one's, the second phase_two's, as report --from
// --to says; marks of phase_two come after those of phase_one in each
// lane, and no sooner than MS; Clear range, Escape and a click on the
// lanes give the whole profile back.
async function checkPhases(b, file, profile, ms, png) {
	const p = await openPage(b, file);
	check((await p.eval(TLS + " !== null")) && !(await p.eval("document.getElementById('timeline').hidden")),
		"the page shows a timeline");
	const lanes = await p.eval(TLS + ".lanes()"), procs = await p.eval(TLS + ".processes()");
	for (const t of ["phases-1", "phases-2"]) {
		const m = lanes.filter((l) => l.thread === t);
		check(m.length === 1 && m[0].label === t + " (tid " + m[0].tid + ")", "one lane for thread " + t + ": " +
			lanes.map((l) => l.label).join(", "));
	}
	check(new Set(lanes.map((l) => l.tid)).size === lanes.length && lanes.every((l) => l.tid > 0),
		"each lane is a thread of its own");
	check(procs.length === 1 && /^work_phases \(pid \d+\)$/.test(procs[0]), "the lanes are under their process: " +
		procs.join(", "));
	const whole = await p.eval(F + ".dataTotal");
	check((await p.eval(F + ".total()")) === whole && (await p.eval(TLS + ".range()")) === null, "no range at first");

	// The first half: phase_one leads, in the top table and the flame graph.
	await dragLanes(p, 0.002, 0.5);
	check((await p.eval(TLS + ".range()")) !== null, "a drag across the lanes chose a range");
	const top1 = await p.eval(F + ".top()");
	check(top1[0].name === "phase_one" && (await flat(p, "phase_two")) < top1[0].flat / 2,
		"the first half: phase_one leads the top functions (" + top1.slice(0, 3).map((r) => r.name).join(", ") + ")");
	const wide = async (name) => Math.max(0, ...(await p.eval(F + ".drawn()")).filter((d) => d.name === name).map((d) => d.w));
	check((await wide("phase_one")) > 2 * (await wide("phase_two")), "and the flame graph: phase_one is the wider frame");
	check((await p.eval(F + ".totalsText()")).startsWith("Range ") &&
		(await p.eval(F + ".totalsText()")).includes("of the profile's") &&
		(await p.eval(F + ".totalsText()")).includes("whole profile's"),
		"the totals are the range's, and say of what: " + await p.eval(F + ".totalsText()"));
	await sameAsReport(p, profile, "the first half");
	await p.screenshot(png + "-range.png");
	await clickElement(p, "tl-clear");
	check((await p.eval(F + ".total()")) === whole && (await p.eval(TLS + ".range()")) === null &&
		(await p.eval(F + ".totalsText()")).startsWith("Total "), "Clear range gives the whole profile back");

	// The second half: phase_two leads.
	await dragLanes(p, 0.5, 0.998);
	const top2 = await p.eval(F + ".top()");
	check(top2[0].name === "phase_two" && (await flat(p, "phase_one")) < top2[0].flat / 2,
		"the second half: phase_two leads (" + top2.slice(0, 3).map((r) => r.name).join(", ") + ")");
	await sameAsReport(p, profile, "the second half");
	await p.key("Escape");
	check((await p.eval(F + ".total()")) === whole && (await p.eval(TLS + ".range()")) === null, "Escape gives the whole profile back");

	// Marks: a click on a frame marks when it was on the stack.
	const byLane = async () => Promise.all(lanes.map((l, i) => p.eval(`${TLS}.marked(${i})`)));
	await clickFrame(p, "phase_one");
	const one = await byLane();
	await p.key("Escape");
	check((await byLane()).every((m) => m.length === 0), "Escape clears the marks");
	await clickFrame(p, "phase_two");
	const two = await byLane(), g = await p.eval(TLS + ".geometry()");
	for (const t of ["phases-1", "phases-2"]) {
		const i = lanes.findIndex((l) => l.thread === t), a = one[i], z = two[i];
		check(a.length > 0 && z.length > 0, t + ": phase_one marks " + a.length + " columns, phase_two " + z.length);
		const lastOne = Math.max(...a.map((x) => x[0])), firstTwo = Math.min(...z.map((x) => x[0]));
		check(firstTwo >= lastOne - 2 * g.bucketNs, t + ": phase_two's marks (from " + (firstTwo / 1e9).toFixed(3) +
			"s) come after phase_one's (to " + (lastOne / 1e9).toFixed(3) + "s)");
		check(firstTwo + g.bucketNs >= 0.9 * ms * 1e6, t + ": and no sooner than the " + ms + " ms of CPU phase_one took");
	}
	const otherLanes = lanes.map((l, i) => i).filter((i) => !/^phases-/.test(lanes[i].thread));
	check(otherLanes.every((i) => two[i].length === 0), "no other thread's lane is marked for phase_two");
	await dragLanes(p, 0.4, 0.9);
	await p.screenshot(png + "-marks.png");
	// A click on the lanes, not a drag: the whole again.
	const g2 = await p.eval(TLS + ".geometry()");
	await p.click((g2.left + g2.right) / 2, g2.canvasTop + lanes[0].y + 4);
	check((await p.eval(F + ".total()")) === whole && (await p.eval(TLS + ".range()")) === null,
		"a click on the lanes gives the whole profile back");
}

// The hand-made profile (t_report_timeline.sh): lanes named and ordered
// by process and thread, each thread's CPU and off-CPU time in its lane,
// and a range's totals, off-CPU intervals cut at its ends, report's, in
// every value of the menu.
async function checkSynthetic(b, file, profile) {
	const p = await openPage(b, file);
	const lanes = await p.eval(TLS + ".lanes()");
	check(JSON.stringify(lanes.map((l) => l.label)) === JSON.stringify(["w1 (tid 8)", "w2 (tid 9)", "h (tid 21)"]),
		"the lanes, by pid then tid: " + lanes.map((l) => l.label).join(", "));
	check(JSON.stringify(await p.eval(TLS + ".processes()")) === JSON.stringify(["app (pid 7)", "helper (pid 20)"]),
		"their processes: " + (await p.eval(TLS + ".processes()")).join(", "));
	const sum = async (what, i) => (await p.eval(`${TLS}.${what}(${i})`)).reduce((x, y) => x + y, 0);
	const near = (x, y) => Math.abs(x - y) <= 1e-6 * y + 1;
	check(near(await sum("cpu", 0), 2e9) && near(await sum("off", 0) + 1, 1), "w1's lane holds its 2s of CPU, no off-CPU");
	check(near(await sum("off", 1), 4e8) && near(await sum("cpu", 1) + 1, 1), "w2's lane holds its 0.4s off the CPU, no CPU");
	check(near(await sum("cpu", 2), 3.03e8), "h's lane holds its 0.303s of CPU");
	// w2's intervals are from 0.5s to 1s: in the columns of that time alone.
	const off = await p.eval(TLS + ".off(1)"), g = await p.eval(TLS + ".geometry()");
	const cols = off.map((v, c) => [c, v]).filter((x) => x[1] > 0).map((x) => x[0]);
	check(cols.length > 0 && cols[0] * g.bucketNs >= 0.5e9 - g.bucketNs && (cols[cols.length - 1] + 1) * g.bucketNs <= 1e9 + g.bucketNs,
		"w2's intervals are drawn from 0.5s to 1s");
	await dragLanes(p, 0.3, 0.6);
	check((await p.eval(F + ".value()")) === "wall", "the page draws wall, the profile's default");
	await sameAsReport(p, profile, "wall over a range that cuts an off-CPU interval");
	for (const v of ["cpu", "off_cpu"]) {
		await p.eval(`${F}.setValue(${JSON.stringify(v)})`);
		await sameAsReport(p, profile, v + ", the range kept");
	}
	await p.eval(`${F}.setValue("wall")`);
	await p.key("Escape");
	const whole = await p.eval(F + ".dataTotal");
	check(whole === 2e9 + 4e8 + 3.03e8 + 1e6 && (await p.eval(F + ".total()")) === whole,
		"Escape: the whole profile's wall again, [unsampled] (which has no time) with it");
}

// A page without a timeline says why in one small line (TEXT), or says
// nothing where TEXT is "" (diff's page).
async function checkNone(b, file, text) {
	const p = await openPage(b, file);
	check((await p.eval(TLS)) === null && (await p.eval("document.getElementById('timeline').hidden")),
		file + ": no timeline");
	const line = await p.eval("document.getElementById('tl-none').hidden ? '' : document.getElementById('tl-none').textContent");
	check(line === text, file + ": the line says " + JSON.stringify(line));
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
	CPUPROF = a.shift();
	let rc = 0;
	try {
		for (let i = 0; i < a.length;) {
			const opt = a[i++];
			if (opt === "--phases")
				await checkPhases(b, a[i++], a[i++], Number(a[i++]), a[i++]);
			else if (opt === "--synthetic")
				await checkSynthetic(b, a[i++], a[i++]);
			else if (opt === "--none")
				await checkNone(b, a[i++], a[i++]);
			else
				fail("unknown option " + opt);
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
