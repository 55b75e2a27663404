// The benchmark suite of rl, side by side with the peers. From the repository root: `pnpm bench`
// (builds first). Options: --only=1,2  (sections)  --quick  (shorter runs, fewer keys: a smoke test)
//                           --no-readme (do not rewrite the tables in bench/README.md; only a full
//                           run without --only/--quick rewrites them)
// Prints one table per section with the ratio columns, writes raw JSON under bench/results/.
import { mkdirSync, writeFileSync, readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { BENCH_DIR, CPUS, hasTaskset, table, fmt } from './lib/common.mjs';

const args = process.argv.slice(2);
const only = args
  .find((a) => a.startsWith('--only='))
  ?.slice(7)
  .split(',');
const quick = args.includes('--quick');
const writeReadme = !args.includes('--no-readme');

const SECTIONS = [
  ['1', './sections/1-consume.mjs'],
  ['2', './sections/2-heap.mjs'],
  ['3', './sections/3-redis.mjs'],
  ['4', './sections/4-http.mjs'],
  ['5', './sections/5-flood.mjs'],
];

const log = (s) => process.stderr.write(s + '\n');
const started = new Date();
const env = {
  date: started.toISOString(),
  node: process.version,
  cpus: CPUS,
  cpuModel: os.cpus()[0]?.model,
  taskset: hasTaskset(),
  load: os.loadavg(),
  quick,
};
log(
  `rl bench: node ${env.node}, ${CPUS} cores, taskset ${env.taskset ? 'yes' : 'no'}, load ${env.load.map((x) => x.toFixed(2)).join(' ')}${quick ? ', QUICK' : ''}`,
);

const out = { env, sections: {} };
const md = [];
const resultsDir = path.join(BENCH_DIR, 'results');
mkdirSync(resultsDir, { recursive: true });
const stamp = started.toISOString().replace(/[:.]/g, '-');
const header = `Run ${env.date}, node ${env.node}, ${CPUS} cores (${env.cpuModel}), load average at start ${env.load.map((x) => x.toFixed(2)).join(' ')}${quick ? ', --quick' : ''}${only ? `, sections ${only.join(',')}` : ''}.`;
/** Written after every section, so an interrupted run keeps what it measured. */
function save() {
  writeFileSync(path.join(resultsDir, `${stamp}.json`), JSON.stringify(out, null, 2));
  writeFileSync(path.join(resultsDir, 'latest.json'), JSON.stringify(out, null, 2));
  writeFileSync(path.join(resultsDir, 'latest.md'), header + '\n\n' + md.join('\n'));
}
for (const [id, file] of SECTIONS) {
  if (only && !only.includes(id)) continue;
  const mod = await import(file);
  const t0 = performance.now();
  log(`\n== ${mod.title}`);
  let result;
  try {
    result = await mod.run({ quick, log });
  } catch (error) {
    result = { skipped: `failed: ${error.message}` };
  }
  result.seconds = (performance.now() - t0) / 1000;
  out.sections[id] = { title: mod.title, ...result };
  const lines = [`### ${mod.title}`, ''];
  if (result.skipped) {
    lines.push(`Skipped: ${result.skipped}`, '');
  } else {
    for (const t of result.tables ?? []) {
      if (t.caption) lines.push(`${t.caption}:`, '');
      lines.push(table(t.headers, t.rows), '');
    }
    if (result.targets?.length) {
      lines.push(
        table(
          ['target', 'measured', 'verdict'],
          result.targets.map((t) => [t.target, typeof t.value === 'number' ? fmt(t.value, 2) : t.value, t.verdict]),
        ),
        '',
      );
    }
    if (result.notes) lines.push(result.notes, '');
  }
  lines.push(`(${result.seconds.toFixed(0)} s)`, '');
  const text = lines.join('\n');
  process.stdout.write('\n' + text + '\n');
  md.push(text);
  save();
}

env.loadAtEnd = os.loadavg();
save();
log(`\nraw results: bench/results/${stamp}.json`);

if (writeReadme && !quick && !only) {
  const readme = path.join(BENCH_DIR, 'README.md');
  if (existsSync(readme)) {
    const text = readFileSync(readme, 'utf8');
    const start = '<!-- results:start -->';
    const end = '<!-- results:end -->';
    const a = text.indexOf(start);
    const b = text.indexOf(end);
    if (a >= 0 && b > a) {
      writeFileSync(
        readme,
        text.slice(0, a + start.length) +
          '\n' +
          header +
          ` Load average at the end ${env.loadAtEnd.map((x) => x.toFixed(2)).join(' ')}.` +
          '\n\n' +
          md.join('\n') +
          '\n' +
          text.slice(b),
      );
      log('bench/README.md updated');
    }
  }
}
process.exit(0);
