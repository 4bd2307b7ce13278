// llama.cpp's prefill and decode tokens/s on a GGUF file (through node-llama-cpp's prebuilt CPU binary), measured
// the way `handoff bench compute` measures Handoff, so the two can stand side by side.
// Usage: node llamacpp-bench.mjs NODE_MODULES MODEL.gguf THREADS PROMPT_LEN DECODE_TOKENS [KV_TYPE=F32|F16] [REPEATS=3] [DECODE_CONTEXT=32]
// NODE_MODULES: a node_modules folder holding node-llama-cpp (and its @node-llama-cpp/linux-x64 binary), or the folder above it.
// Prints one JSON object: the median over REPEATS of each figure.
//   prefill: one sequence evaluates PROMPT_LEN token ids (uniform in [0, 256), a fixed seed) in one batch, no sampling.
//   decode: after a DECODE_CONTEXT-token prompt, the time from the first generated token to the last of DECODE_TOKENS (greedy).
import {createRequire} from "node:module";
import {existsSync} from "node:fs";
import {join} from "node:path";
import {pathToFileURL} from "node:url";

const [modules, modelPath, threadsArg, promptArg, decodeArg, kvType = "F32", repeatsArg = "3", contextArg = "32"] = process.argv.slice(2);
if (!modules || !modelPath || !threadsArg || !promptArg || !decodeArg) {
  console.error("usage: node llamacpp-bench.mjs NODE_MODULES MODEL.gguf THREADS PROMPT_LEN DECODE_TOKENS [KV_TYPE] [REPEATS] [DECODE_CONTEXT]");
  process.exit(2);
}
const [threads, promptLen, decodeTokens, repeats, decodeContext] = [threadsArg, promptArg, decodeArg, repeatsArg, contextArg].map(Number);
const root = existsSync(join(modules, "node-llama-cpp")) ? modules : join(modules, "node_modules");
if (!existsSync(join(root, "node-llama-cpp"))) {
  console.error(`${modules} holds no node-llama-cpp; install it there (npm install node-llama-cpp@3.21.1) or give its node_modules folder`);
  process.exit(2);
}
const entry = createRequire(join(root, "..", "package.json")).resolve("node-llama-cpp");
const {getLlama} = await import(pathToFileURL(entry).href);

const llama = await getLlama({gpu: false, build: "never", logLevel: "error", maxThreads: threads});
const model = await llama.loadModel({modelPath});
const context = await model.createContext({contextSize: Math.max(promptLen, decodeContext) + decodeTokens + 64, threads,
  batchSize: Math.max(promptLen, decodeContext, 32),
  sequences: 1, experimentalKvCacheKeyType: kvType, experimentalKvCacheValueType: kvType});
const sequence = context.getSequence();

// a splitmix-style generator: the same prompts every run, no dependency
let state = 12345n;
function nextId() {
  state = (state + 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn;
  let z = state;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & 0xffffffffffffffffn;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & 0xffffffffffffffffn;
  return Number((z ^ (z >> 31n)) % 256n);
}
const prompt = n => Array.from({length: n}, nextId);

async function prefill(ids) {
  await sequence.clearHistory();
  const start = process.hrtime.bigint();
  await sequence.evaluateWithoutGeneratingNewTokens(ids);
  return ids.length / (Number(process.hrtime.bigint() - start) / 1e9);
}

async function decode(ids, n) {
  await sequence.clearHistory();
  let first = 0n;
  let count = 0;
  for await (const token of sequence.evaluate(ids, {temperature: 0})) {
    if (++count === 1) {
      first = process.hrtime.bigint();
    }
    if (count >= n) {
      break;
    }
  }
  return (n - 1) / (Number(process.hrtime.bigint() - first) / 1e9);
}

const median = xs => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
await prefill(prompt(Math.min(64, promptLen))); // warm-up
await decode(prompt(decodeContext), Math.min(4, decodeTokens));
const prefills = [];
const decodes = [];
for (let r = 0; r < repeats; r++) {
  prefills.push(await prefill(prompt(promptLen)));
  decodes.push(await decode(prompt(decodeContext), decodeTokens));
}
console.log(JSON.stringify({engine: "llama.cpp (node-llama-cpp)", threads, prompt_len: promptLen, decode_context: decodeContext, decode_tokens: decodeTokens,
  kv_type: kvType, prefill_tokens_per_s: median(prefills), decode_tokens_per_s: median(decodes)}));
await context.dispose();
await model.dispose();
