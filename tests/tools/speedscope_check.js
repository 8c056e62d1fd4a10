// speedscope_check.js -- checks `cpuprof report --format speedscope`'s
// files for tests/e2e/t_report_speedscope.sh: against the schema the
// speedscope package ships, against what the test expects, against
// report's own folded stacks, and loaded into speedscope itself in
// headless Chromium (over tests/tools/cdp.js).
//
// Usage: node speedscope_check.js COMMAND ARGS...
//   schema FILE SCHEMA       FILE holds to SCHEMA (speedscope's
//                            file-format-schema.json: its $ref, anyOf,
//                            type, const, enum, properties, required and
//                            items; any other keyword is refused, so that
//                            a new schema is not passed unread), has no
//                            member the schema does not name, and: every
//                            frame index in range, samples and weights of
//                            one length, weights positive integers,
//                            endValue - startValue their sum.
//   expect FILE EXPECT       FILE's profiles are EXPECT's (JSON: [{name,
//                            stacks: ["root;...;leaf", ...], weights}],
//                            in order; "name" a regular expression the
//                            file's name matches, "active" its
//                            activeProfileIndex, "frames" {name: {file,
//                            line}} what the frames of those names say
//                            beside their names), in every sample.
//   folded FILE FOLDED HOT   FILE's samples, each under its thread's
//                            grouping frames, add up to FOLDED's lines
//                            (report --format folded --group-by thread),
//                            stack by stack; and HOT is the heaviest leaf
//                            of the file and of each thread holding more
//                            than a third of the weight.
//   view DIR FILE HOT SHOT   loads FILE into the speedscope viewer in DIR
//                            (its dist/release) as its command line does
//                            (index.html#localProfilePath=, a script that
//                            calls speedscope.loadFileFromBase64) and
//                            checks, in the page: no error or alert; the
//                            title is FILE's name; the profile selector
//                            lists exactly FILE's profiles, speedscope's
//                            totals of their samples within 1% of their
//                            weights' sums; the profile shown first is
//                            the heaviest; the Sandwich view's first row
//                            (by self time) is HOT.  Screenshots of the
//                            Time Order view and of the selector over the
//                            Sandwich view: SHOT-time.png, SHOT-sandwich.png.
// Exit 0 if all holds, 1 (with what did not) if not, 77 where Chromium
// cannot start.
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");

const problems = [];
function check(ok, what) {
	if (!ok)
		problems.push(what);
	return ok;
}
function done() {
	if (problems.length) {
		problems.slice(0, 30).forEach((p) => console.error("FAIL: " + p));
		process.exit(1);
	}
	process.exit(0);
}

// ---- schema -------------------------------------------------------------

const KEYWORDS = new Set(["$ref", "$schema", "definitions", "title", "anyOf", "type", "const", "enum", "properties",
	"required", "items"]);

// The problems of value v against schema node s ("" if none); at is where.
function validate(root, s, v, at) {
	for (const k of Object.keys(s))
		if (!KEYWORDS.has(k))
			throw new Error("the schema has keyword '" + k + "' at " + at + ", which this check does not know");
	if (s.$ref) {
		const m = /^#\/definitions\/(.*)$/.exec(s.$ref);
		if (!m || !root.definitions[m[1]])
			throw new Error("unknown $ref " + s.$ref);
		return validate(root, root.definitions[m[1]], v, at);
	}
	if (s.anyOf) {
		const errs = s.anyOf.map((alt) => validate(root, alt, v, at));
		if (errs.every((e) => e))
			return at + ": none of anyOf holds (" + errs.join("; ") + ")";
	}
	if (s.type) {
		const t = Array.isArray(v) ? "array" : v === null ? "null" : typeof v;
		if (t !== s.type && !(s.type === "integer" && Number.isInteger(v)))
			return at + ": " + t + ", not " + s.type;
	}
	if ("const" in s && v !== s.const)
		return at + ": " + JSON.stringify(v) + ", not " + JSON.stringify(s.const);
	if (s.enum && !s.enum.includes(v))
		return at + ": " + JSON.stringify(v) + " not one of " + JSON.stringify(s.enum);
	if (s.required)
		for (const k of s.required)
			if (!(k in v))
				return at + ": no member " + k;
	if (s.properties) {
		for (const k of Object.keys(v)) {
			if (!(k in s.properties))
				return at + ": member " + k + " is not in the schema";
			const e = validate(root, s.properties[k], v[k], at + "." + k);
			if (e)
				return e;
		}
	}
	if (s.items && Array.isArray(v)) {
		for (let i = 0; i < v.length; i++) {
			const e = validate(root, s.items, v[i], at + "[" + i + "]");
			if (e)
				return e;
		}
	}
	return "";
}

function load(file) {
	return JSON.parse(fs.readFileSync(file, "utf8"));
}

// The schema's check and the invariants it cannot say.
function checkSchema(f, schema) {
	const e = validate(schema, { $ref: schema.$ref }, f, "file");
	check(!e, "not valid against speedscope's schema: " + e);
	if (e)
		return;
	const nf = f.shared.frames.length;
	f.profiles.forEach((p, i) => {
		const at = "profile " + i + " (" + p.name + ")";
		check(p.type === "sampled", at + ": type " + p.type);
		check(p.samples.length === p.weights.length, at + ": " + p.samples.length + " samples, " + p.weights.length + " weights");
		check(p.samples.every((s) => s.every((k) => Number.isInteger(k) && k >= 0 && k < nf)),
			at + ": a frame index out of 0.." + (nf - 1));
		check(p.weights.every((w) => Number.isInteger(w) && w > 0), at + ": a weight that is not a positive integer");
		const sum = p.weights.reduce((a, b) => a + b, 0);
		check(p.endValue - p.startValue === sum, at + ": endValue - startValue " + (p.endValue - p.startValue) +
			", the weights add up to " + sum);
		check(p.name.length > 0, at + ": no name");
	});
	check(!("activeProfileIndex" in f) || (f.activeProfileIndex >= 0 && f.activeProfileIndex < Math.max(1, f.profiles.length)),
		"activeProfileIndex " + f.activeProfileIndex + " of " + f.profiles.length + " profiles");
	check(/^cpuprof /.test(f.exporter || ""), "exporter " + f.exporter);
}

function stackOf(f, s) {
	return s.map((k) => f.shared.frames[k].name).join(";");
}

// ---- expect ---------------------------------------------------------------

function checkExpect(f, exp) {
	if (exp.name)
		check(new RegExp(exp.name).test(f.name), "name " + JSON.stringify(f.name) + " does not match /" + exp.name + "/");
	if ("active" in exp)
		check(f.activeProfileIndex === exp.active, "activeProfileIndex " + f.activeProfileIndex + ", not " + exp.active);
	check(f.profiles.length === exp.profiles.length, f.profiles.length + " profiles (" +
		f.profiles.map((p) => p.name).join(", ") + "), not " + exp.profiles.length);
	exp.profiles.forEach((e, i) => {
		const p = f.profiles[i];
		if (!p)
			return;
		check(p.name === e.name, "profile " + i + " is " + JSON.stringify(p.name) + ", not " + JSON.stringify(e.name));
		const got = p.samples.map((s) => stackOf(f, s));
		check(JSON.stringify(got) === JSON.stringify(e.stacks), p.name + ": samples\n  " + got.join(" | ") +
			"\n  not\n  " + e.stacks.join(" | "));
		check(JSON.stringify(p.weights) === JSON.stringify(e.weights), p.name + ": weights " +
			JSON.stringify(p.weights) + ", not " + JSON.stringify(e.weights));
	});
	for (const [name, want] of Object.entries(exp.frames || {})) {
		const fr = f.shared.frames.filter((x) => x.name === name);
		check(fr.length === 1, fr.length + " frames named " + name);
		fr.forEach((x) => check(x.file === want.file && x.line === want.line, "frame " + name + " says file " + x.file +
			" line " + x.line + ", not " + want.file + " " + want.line));
	}
}

// ---- folded ---------------------------------------------------------------

// "PROCESS PID / THREAD TID" as report's grouping frames.
function groupFrames(name) {
	const m = /^(.*) (\d+) \/ (.*) (\d+)$/.exec(name);
	return m ? m[1] + " (pid " + m[2] + ");" + m[3] + " (tid " + m[4] + ")" : null;
}

function checkFolded(f, foldedText, hot) {
	const want = new Map();
	for (const line of foldedText.split("\n")) {
		const m = /^(.*) (-?\d+)$/.exec(line);
		if (m)
			want.set(m[1], (want.get(m[1]) || 0) + Number(m[2]));
	}
	const got = new Map(), leaves = new Map(), threads = [];
	let total = 0;
	for (const p of f.profiles) {
		const placed = p.name !== "[not placed in time]";
		const g = placed ? groupFrames(p.name) : "";
		if (!check(g !== null, "profile " + JSON.stringify(p.name) + " is not named PROCESS PID / THREAD TID"))
			continue;
		const tl = new Map();
		p.samples.forEach((s, i) => {
			const st = (placed ? g + ";" : "") + stackOf(f, s), leaf = s.length ? f.shared.frames[s[s.length - 1]].name : "";
			got.set(st, (got.get(st) || 0) + p.weights[i]);
			leaves.set(leaf, (leaves.get(leaf) || 0) + p.weights[i]);
			tl.set(leaf, (tl.get(leaf) || 0) + p.weights[i]);
			total += p.weights[i];
		});
		if (placed)
			threads.push({ name: p.name, w: p.weights.reduce((a, b) => a + b, 0), leaves: tl });
	}
	let bad = 0;
	for (const [st, w] of want)
		if (w > 0 && got.get(st) !== w && bad++ < 5)
			check(false, "stack " + st + ": " + (got.get(st) || 0) + " in speedscope's file, " + w + " in report's folded");
	for (const [st, w] of got)
		if (!want.has(st) && bad++ < 5)
			check(false, "stack " + st + " (" + w + ") is not in report's folded");
	check(bad === 0, bad + " stacks differ from report's");
	const groups = new Set([...want.keys()].map((s) => s.split(";").slice(0, 2).join(";")).filter((s) => / \(tid \d+\)$/.test(s)));
	check(threads.length === groups.size, threads.length + " thread profiles, report has " + groups.size + " threads");
	const heaviest = (m) => [...m.entries()].sort((a, b) => b[1] - a[1])[0] || ["", 0];
	const [top, topw] = heaviest(leaves);
	check(top === hot, "the heaviest leaf is " + top + ", not " + hot);
	const max = Math.max(...threads.map((t) => t.w));
	const busy = threads.filter((t) => t.w > max / 3);
	busy.forEach((t) => check(heaviest(t.leaves)[0] === hot, t.name + ": its heaviest leaf is " + heaviest(t.leaves)[0]));
	console.log("folded: " + got.size + " stacks, " + threads.length + " threads (" + busy.length + " busy), total " +
		total + " ns, " + top + " " + (100 * topw / total).toFixed(1) + "%");
}

// ---- view -----------------------------------------------------------------

async function view(dir, file, hot, shot) {
	const cdp = require(path.join(__dirname, "cdp.js"));
	const f = load(file);
	const totals = {};
	for (const p of f.profiles)
		totals[p.name] = p.weights.reduce((a, b) => a + b, 0);
	const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "cpuprof-speedscope-"));
	// What speedscope's command line writes: a script for its page.
	const js = path.join(tmp, "profile.js");
	fs.writeFileSync(js, "speedscope.loadFileFromBase64(" + JSON.stringify(path.basename(file)) + ", " +
		JSON.stringify(fs.readFileSync(file).toString("base64")) + ")");
	let b;
	try {
		b = await cdp.launch(process.env.CHROMIUM || "/usr/bin/chromium", 60000);
	} catch (e) {
		if (e.launch) {
			console.log("skip: Chromium does not start here: " + e.message.slice(0, 300));
			process.exit(77);
		}
		throw e;
	}
	try {
		const url = "file://" + path.resolve(dir, "dist/release/index.html") + "#localProfilePath=" + js;
		const page = await cdp.open(b, url, 60000);
		const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
		// The toolbar says "NAME (k/N)" once the profile is in.
		let bar = "";
		for (let i = 0; i < 300 && !/\(\d+\/\d+\)/.test(bar) && !b.errors.length; i++) {
			await sleep(100);
			bar = await page.eval("document.body.innerText.split('\\n').find(l => /\\(\\d+\\/\\d+\\)$/.test(l)) || ''");
		}
		check(b.errors.length === 0, "the page said: " + b.errors.join("; "));
		if (!check(bar, "speedscope shows no profile of the file"))
			return;
		await sleep(500);
		await page.screenshot(shot + "-time.png");
		check(await page.eval("document.title") === f.name + " - speedscope",
			"the page's title is " + JSON.stringify(await page.eval("document.title")));
		const names = Object.keys(totals);
		const heaviest = names.reduce((a, n) => (n !== "[not placed in time]" && (!a || totals[n] > totals[a]) ? n : a), "");
		check(bar === heaviest + " (" + (names.indexOf(heaviest) + 1) + "/" + names.length + ")",
			"the profile shown first is " + JSON.stringify(bar) + ", not the heaviest, " + heaviest);
		// The Sandwich view: a table of functions, by self time.
		const at = await page.eval(`(() => { const e = [...document.querySelectorAll("div")].find(d =>
			d.children.length <= 2 && /Sandwich$/.test(d.textContent.trim())); if (!e) return null;
			const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()`);
		if (!check(at, "no Sandwich button"))
			return;
		await page.click(at[0], at[1]);
		let rows = [];
		for (let i = 0; i < 100 && rows.length < 2; i++) {
			await sleep(100);
			rows = await page.eval(`(() => { const l = document.body.innerText.split("\\n").map(s => s.trim()).filter(s => s);
				const h = l.findIndex(s => /\tSymbol Name$/.test(s)); return h < 0 ? [] : l.slice(h + 1, h + 31); })()`);
		}
		// Each row: total, self, name.
		check(rows[2] === hot, "the Sandwich view's first function is " + rows[2] + ", not " + hot);
		// The profile selector: every profile with speedscope's total.
		const sel = await page.eval(`(() => { const e = [...document.querySelectorAll("span")].find(s =>
			/^\\(\\d+\\/\\d+\\)$/.test(s.textContent)); const r = e.getBoundingClientRect();
			return [r.x + r.width / 2, r.y + r.height / 2]; })()`);
		await page.click(sel[0], sel[1]);
		let listed = [];
		for (let i = 0; i < 50 && listed.length < names.length; i++) {
			await sleep(100);
			listed = await page.eval(`(() => { const l = document.body.innerText.split("\\n");
				const h = l.findIndex(s => /^#\\tName\\tTotal Weight/.test(s)); if (h < 0) return [];
				return l.slice(h + 1).map(s => s.split("\\t")).filter(c => c.length === 3 && /^\\d+$/.test(c[0])); })()`);
		}
		await page.screenshot(shot + "-sandwich.png");
		check(listed.length === names.length, "the selector lists " + listed.length + " profiles, not " + names.length);
		const unit = { ns: 1, "µs": 1e3, ms: 1e6, s: 1e9 };
		for (const [, name, w] of listed) {
			const m = /^([\d.]+)(ns|µs|ms|s)$/.exec(w);
			check(name in totals, "the selector lists " + JSON.stringify(name) + ", which is not a thread of the profile");
			if (m && name in totals)
				check(Math.abs(Number(m[1]) * unit[m[2]] - totals[name]) <= 0.01 * totals[name] + 1,
					name + ": speedscope's total " + w + ", report's " + totals[name] + " ns");
			else
				check(!!m, name + ": a total speedscope wrote as " + w);
		}
		check(b.errors.length === 0, "the page said: " + b.errors.join("; "));
		console.log("view: " + bar + "; " + listed.map((c) => c[1] + " " + c[2]).join(", ") + "; first by self: " +
			rows.slice(0, 3).join(" "));
	} finally {
		await b.close();
		fs.rmSync(tmp, { recursive: true, force: true });
	}
}

async function main() {
	const [cmd, ...a] = process.argv.slice(2);
	if (cmd === "schema" && a.length === 2) {
		checkSchema(load(a[0]), load(a[1]));
	} else if (cmd === "expect" && a.length === 2) {
		checkExpect(load(a[0]), load(a[1]));
	} else if (cmd === "folded" && a.length === 3) {
		checkFolded(load(a[0]), fs.readFileSync(a[1], "utf8"), a[2]);
	} else if (cmd === "view" && a.length === 4) {
		await view(a[0], a[1], a[2], a[3]);
	} else {
		console.error("usage: speedscope_check.js schema|expect|folded|view ARGS... (see its head)");
		process.exit(2);
	}
	done();
}

main().catch((e) => {
	console.error("FAIL: " + (e.stack || e));
	process.exit(1);
});
