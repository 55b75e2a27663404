// Loaded into a server process with `--import` (bench/http-alloc-profile.mjs): V8's sampling heap
// profiler, collected objects included, started by the first SIGUSR2 and stopped by the second, which
// writes the profile to $RL_HEAP_PROFILE and prints `PROFILE_WRITTEN`.
import inspector from 'node:inspector';
import { writeFileSync } from 'node:fs';

const session = new inspector.Session();
session.connect();
const post = (method, params) =>
  new Promise((resolve, reject) => session.post(method, params, (e, r) => (e ? reject(e) : resolve(r))));
let sampling = false;
process.on('SIGUSR2', async () => {
  if (!sampling) {
    sampling = true;
    await post('HeapProfiler.enable');
    await post('HeapProfiler.startSampling', {
      samplingInterval: Number(process.env.RL_HEAP_SAMPLING_INTERVAL ?? 64),
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    process.stdout.write('PROFILE_STARTED\n');
  } else {
    const { profile } = await post('HeapProfiler.stopSampling');
    writeFileSync(process.env.RL_HEAP_PROFILE, JSON.stringify(profile));
    process.stdout.write('PROFILE_WRITTEN\n');
  }
});
