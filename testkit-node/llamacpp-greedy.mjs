// llama.cpp's greedy generation on a GGUF file. REQUEST.json: {prompts: [text...], tokens: N, kvType: "F16" | "F32",
// flashAttention: "auto" | true | false}. For each prompt (a fresh context of 512 positions, 2 threads): the prompt's
// ids (BOS where the model asks for one, then llama_tokenize with special tokens parsed), N ids sampled at
// temperature 0 (an end-of-generation token does not stop it, as Handoff's ignore_eos), and at each step the 8 most
// likely tokens with their natural-log probabilities: differences of those are differences of llama.cpp's logits.
// Writes OUT.json: {prompts: [[...]], outputs: [[...]], top: [[[[token, logprob]...]...]...]}.
// Usage: node llamacpp-greedy.mjs NODE_MODULES MODEL.gguf REQUEST.json OUT.json
import {readFileSync, writeFileSync} from "node:fs";
import {loadLlama} from "./llamacpp.mjs";

const [modules, modelPath, inFile, outFile] = process.argv.slice(2);
const request = JSON.parse(readFileSync(inFile, "utf8"));
const llama = await loadLlama(modules);
const model = await llama.loadModel({modelPath});
const prompts = [], outputs = [], top = [];
for (const text of request.prompts) {
  const context = await model.createContext({contextSize: 512, threads: 2, sequences: 1, flashAttention: request.flashAttention,
    experimentalKvCacheKeyType: request.kvType, experimentalKvCacheValueType: request.kvType});
  const ids = (model.tokens.shouldPrependBosToken ? [model.tokens.bos] : []).concat(Array.from(model.tokenize(text, true)));
  const out = [], steps = [];
  const evaluation = context.getSequence().evaluateWithMetadata(ids, {probabilities: true}, {temperature: 0, yieldEogToken: true});
  for await (const {token, probabilities} of evaluation) {
    out.push(token);
    steps.push([...take(probabilities.entries(), 8)].map(([t, p]) => [t, Math.log(p)]));
    if (out.length >= request.tokens) break;
  }
  prompts.push(ids);
  outputs.push(out);
  top.push(steps);
  await context.dispose();
}
writeFileSync(outFile, JSON.stringify({prompts, outputs, top}));
await model.dispose();

// node-llama-cpp hands the probabilities over sorted, best first
function* take(entries, n) {
  for (const entry of entries) {
    if (n-- <= 0) return;
    yield entry;
  }
}
