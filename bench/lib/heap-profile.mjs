// Reading a V8 sampling heap profile (HeapProfiler.stopSampling's `profile`) as bytes per operation by
// allocating frame: shared by bench/http-alloc-profile.mjs and bench/redis-alloc-profile.mjs.

/**
 * Rows `[frame, bytes per operation, "size B × objects per operation, …"]`, most bytes first: the
 * frame at the top of the JS stack for each sample (what the compiler inlined is counted in the function
 * it was inlined into), over `operations`, sampled every `interval` bytes. `which`: `packages` keeps the
 * frames of packages/ only, `all` every frame.
 */
export function bytesByFrame(profile, { interval, operations, which }) {
  const nameOf = new Map();
  const walk = (node) => {
    const f = node.callFrame;
    nameOf.set(
      node.id,
      `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(packages|node_modules)\//, '$1/')}:${f.lineNumber + 1}`,
    );
    node.children.forEach(walk);
  };
  walk(profile.head);
  const frames = new Map();
  for (const sample of profile.samples) {
    const name = nameOf.get(sample.nodeId);
    if (which !== 'all' && !name.includes('packages/')) continue;
    const sizes = frames.get(name) ?? new Map();
    frames.set(name, sizes);
    sizes.set(sample.size, (sizes.get(sample.size) ?? 0) + 1);
  }
  // A sample of `size` bytes stands for 1 / (1 - e^(-size / interval)) objects of that size (V8's scaling).
  const rows = [...frames].map(([name, sizes]) => {
    let bytes = 0;
    const parts = [];
    for (const [size, count] of [...sizes].sort((a, b) => b[0] - a[0])) {
      const objects = count / (1 - Math.exp(-size / interval)) / operations;
      bytes += size * objects;
      if (objects >= 0.05) parts.push(`${size} B × ${objects.toFixed(2)}`);
    }
    return [name, bytes, parts.join(', ')];
  });
  return rows.sort((a, b) => b[1] - a[1]);
}
