// Preloaded (`node -r test/stack-probe.cjs dist/main.js …`): writes a stack taken inside the sandbox's
// bundle, where the command line emits its ready event (src/main.ts), to stderr as `STACK <json>`.
const emit = process.emit;
process.emit = function (name, ...rest) {
  if (name === 'shipping-sandbox:ready')
    process.stderr.write(`STACK ${JSON.stringify(new Error('stack probe').stack)}\n`);
  return emit.call(this, name, ...rest);
};
