// llama.cpp's greedy generation on a GGUF file. REQUEST.json: {prompts: [text...], tokens: N, kvType: "F16" | "F32",
// flashAttention: "auto" | true | false}. For each prompt (a fresh context of 512 positions, 2 threads): the prompt's
// ids (BOS where the model asks for one, then llama_tokenize with special tokens parsed) and N ids sampled at
// temperature 0. Writes OUT.json: {prompts: [[...]], outputs: [[...]]}.
// Usage: node llamacpp-greedy.mjs NODE_MODULES MODEL.gguf REQUEST.json OUT.json
import {readFileSync, writeFileSync} from "node:fs";
import {loadLlama} from "./llamacpp.mjs";

const [modules, modelPath, inFile, outFile] = process.argv.slice(2);
const request = JSON.parse(readFileSync(inFile, "utf8"));
const llama = await loadLlama(modules);
const model = await llama.loadModel({modelPath});
const prompts = [], outputs = [];
for (const text of request.prompts) {
  const context = await model.createContext({contextSize: 512, threads: 2, sequences: 1, flashAttention: request.flashAttention,
    experimentalKvCacheKeyType: request.kvType, experimentalKvCacheValueType: request.kvType});
  const ids = (model.tokens.shouldPrependBosToken ? [model.tokens.bos] : []).concat(Array.from(model.tokenize(text, true)));
  const out = [];
  for await (const token of context.getSequence().evaluate(ids, {temperature: 0})) {
    out.push(token);
    if (out.length >= request.tokens) break;
  }
  prompts.push(ids);
  outputs.push(out);
  await context.dispose();
}
writeFileSync(outFile, JSON.stringify({prompts, outputs}));
await model.dispose();
