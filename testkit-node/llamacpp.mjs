// Loads llama.cpp (node-llama-cpp's prebuilt CPU binary) from the node_modules folder a Java test names, which need
// not be the one next to this file: HANDOFF_NODE_MODULES may point anywhere.
import {createRequire} from "node:module";
import {join} from "node:path";
import {pathToFileURL} from "node:url";

export async function loadLlama(modules) {
  const entry = createRequire(join(modules, "resolve-from-here.js")).resolve("node-llama-cpp");
  const {getLlama} = await import(pathToFileURL(entry).href);
  // build "never": only the prebuilt binary, so a missing one fails instead of compiling llama.cpp
  return getLlama({gpu: false, build: "never", logLevel: "error"});
}
