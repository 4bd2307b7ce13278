// llama.cpp's tokenizer on a GGUF file, for each text of TEXTS.json: the ids of llama_tokenize(text,
// add_special = false, parse_special = true), what Handoff's encode(text, false) must give, and llama_detokenize
// of those ids (special tokens unparsed). Writes OUT.json: {ids: [[...]], texts: [...], bos, eos, addBos}.
// Usage: node llamacpp-tokenize.mjs NODE_MODULES MODEL.gguf TEXTS.json OUT.json
import {readFileSync, writeFileSync} from "node:fs";
import {loadLlama} from "./llamacpp.mjs";

const [modules, modelPath, inFile, outFile] = process.argv.slice(2);
const llama = await loadLlama(modules);
const model = await llama.loadModel({modelPath, vocabOnly: true});
const ids = [], texts = [];
for (const text of JSON.parse(readFileSync(inFile, "utf8"))) {
  const tokens = Array.from(model.tokenize(text, true));
  ids.push(tokens);
  texts.push(model.detokenize(tokens, false));
}
writeFileSync(outFile, JSON.stringify({ids, texts, bos: model.tokens.bos ?? -1, eos: model.tokens.eos ?? -1,
  addBos: model.tokens.shouldPrependBosToken}));
await model.dispose();
