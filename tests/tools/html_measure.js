// html_measure.js -- how fast pages of `cpuprof report --format html`
// become usable in headless Chromium (tests/tools/cdp.js): for each PAGE, the
// time from navigation until the page's script is ready, its own timings
// (parsing the data, building the first view, the first render), the
// render after a click zoom into the widest frame, a search, and the
// JavaScript heap; with a timeline, decoding and sorting its samples,
// drawing its lanes, and the redraw after a drag across half the lanes
// and after ranges of a tenth and all but the ends (set through the
// page's interface).  Used by scripts/bench-flame.sh and docs/report.md.
// Usage: node tests/tools/html_measure.js PAGE...
"use strict";
const cdp = require("./cdp.js");
(async () => {
	const b = await cdp.launch("/usr/bin/chromium", 60000);
	for (const f of process.argv.slice(2)) {
		const t0 = Date.now();
		const p = await cdp.open(b, "file://" + require("path").resolve(f), 120000);
		while (!(await p.eval("!!(window.cpuprofFlame && cpuprofFlame.ready)"))) await new Promise(r => setTimeout(r, 20));
		const load = Date.now() - t0;
		const tm = await p.eval("cpuprofFlame.timings()");
		const nd = await p.eval("cpuprofFlame.drawn().length");
		// zoom into the widest child of the root, time the render
		const z = await p.eval("(() => { const A = cpuprofFlame; const d = A.drawn().filter(d => d.id !== 0).sort((a, b) => b.w - a.w)[0] || A.merged()[0]; const r = A.canvasRect(); return [r.x + d.x + 5, r.y + d.y + 5]; })()");
		await p.click(z[0], z[1]);
		const tz = await p.eval("cpuprofFlame.timings().render");
		const t1 = Date.now();
		await p.eval("(() => { const s = document.getElementById('search'); s.value = 'f1'; s.dispatchEvent(new Event('input')); })()");
		const ts = Date.now() - t1;
		const mem = await p.eval("performance.memory ? Math.round(performance.memory.usedJSHeapSize / 1048576) : -1");
		console.log(f + `: load-to-ready ${load} ms; parse ${tm.parse.toFixed(0)} ms, first view ${tm.view.toFixed(0)} ms, render ${tm.render.toFixed(1)} ms (${nd} frames drawn); zoom render ${tz.toFixed(1)} ms; search+render ${ts} ms; JS heap ${mem} MiB`);
		if (await p.eval("!!cpuprofFlame.timeline")) {
			const n = await p.eval("cpuprofFlame.timeline.samples()");
			console.log(`  timeline: ${n.cpu} CPU samples, ${n.off} off-CPU, ${n.records} stacks; drawn ${tm.navigationToReady.toFixed(0)} ms after the navigation began, its script ${tm.ready.toFixed(0)} ms after it started; decode ${tm.timeline.toFixed(1)} ms, lanes ${tm.lanes.toFixed(1)} ms`);
			const g = await p.eval("cpuprofFlame.timeline.geometry()"), y = g.top + 8;
			const t2 = Date.now();
			await p.drag(g.left + 2, (g.left + g.right) / 2, y);
			const dragMs = Date.now() - t2;
			const r = [`drag over half: redraw ${(await p.eval("cpuprofFlame.timings().range")).toFixed(1)} ms (${dragMs} ms from the press to the redraw done, over the protocol)`];
			const d = await p.eval("cpuprofFlame.timeline.duration");
			for (const [a, z, what] of [[0.45, 0.55, "a tenth"], [0.01, 0.99, "all but the ends"]]) {
				await p.eval(`cpuprofFlame.timeline.setRange(${a * d}, ${z * d})`);
				r.push(`${what}: ${(await p.eval("cpuprofFlame.timings().range")).toFixed(1)} ms`);
			}
			console.log("  range redraw: " + r.join("; "));
		}
	}
	console.log("errors: " + b.errors.length + " " + b.errors.join(";").slice(0, 500));
	await b.close();
	process.exit(0);
})();
