// The official OpenAI client (npm "openai", pinned in package.json) against a Handoff server or router: completions and
// chat, each without and with streaming, the model list and the model object, the Responses API, a json_schema
// response format and a required tool call (whole and streamed). Loaded from the
// node_modules folder a Java test names (HANDOFF_NODE_MODULES may point anywhere). Greedy, so a streamed answer must
// add up to the one answered whole. Prints one JSON line of what it saw; exits 1 naming the first check that failed.
//
//   node openai-client.mjs NODE_MODULES BASE_URL MODEL
import {createRequire} from "node:module";
import {join} from "node:path";
import {pathToFileURL} from "node:url";

const [modules, baseURL, model] = process.argv.slice(2);
const entry = createRequire(join(modules, "resolve-from-here.js")).resolve("openai");
const {default: OpenAI} = await import(pathToFileURL(entry).href);
const client = new OpenAI({baseURL, apiKey: process.env.HANDOFF_API_KEY || "no-key", maxRetries: 0, timeout: 120_000});
const seen = {};

function check(condition, what, value) {
  if (!condition) {
    console.error(`FAIL: ${what}: ${JSON.stringify(value)?.slice(0, 500)}`);
    process.exit(1);
  }
}

async function refused(what, call, status) {
  try {
    await call();
  } catch (error) {
    check(error instanceof OpenAI.APIError && error.status === status, `${what} is refused with ${status}`, String(error));
    return error;
  }
  check(false, `${what} is refused with ${status}`, "it succeeded");
}

// models
const list = await client.models.list();
check(list.data.length === 1 && list.data[0].id === model, "models.list names the served model", list.data);
const one = await client.models.retrieve(model);
check(one.id === model && one.object === "model", "models.retrieve gives the model object", one);
const missing = await refused("models.retrieve of another model", () => client.models.retrieve("no-such-model"), 404);
check(missing instanceof OpenAI.NotFoundError, "a missing model is a NotFoundError", String(missing));
seen.models = list.data.map(m => m.id);

// completions
const prompt = "The quick brown fox";
const completion = await client.completions.create({model, prompt, max_tokens: 8, temperature: 0});
check(completion.object === "text_completion" && completion.choices.length === 1, "a completion's shape", completion);
check(typeof completion.choices[0].text === "string", "a completion's text", completion.choices[0]);
check(completion.usage.completion_tokens >= 1 && completion.usage.completion_tokens <= 8, "a completion's usage", completion.usage);
let streamed = "";
let chunks = 0;
for await (const chunk of await client.completions.create({model, prompt, max_tokens: 8, temperature: 0, stream: true})) {
  chunks++;
  streamed += chunk.choices[0]?.text ?? "";
}
check(chunks >= 1 && streamed === completion.choices[0].text, "streamed completion text equals the whole one", {streamed, whole: completion.choices[0].text});
seen.completion = completion.choices[0].text;

// chat completions and responses
const messages = [{role: "user", content: "Say hello"}];
const chat = await client.chat.completions.create({model, messages, max_tokens: 8, temperature: 0});
check(chat.object === "chat.completion" && chat.choices[0].message.role === "assistant", "a chat completion's shape", chat);
const content = chat.choices[0].message.content;
check(typeof content === "string", "a chat completion's content", chat.choices[0]);
let chatStreamed = "";
let sawUsage = false;
const chatStream = await client.chat.completions.create({model, messages, max_tokens: 8, temperature: 0, stream: true,
  stream_options: {include_usage: true}});
for await (const chunk of chatStream) {
  chatStreamed += chunk.choices[0]?.delta?.content ?? "";
  sawUsage ||= chunk.usage?.completion_tokens === chat.usage.completion_tokens;
}
check(chatStreamed === content, "streamed chat content equals the whole one", {chatStreamed, content});
check(sawUsage, "the streamed chat's usage chunk", chat.usage);

const response = await client.responses.create({model, input: "Say hello", max_output_tokens: 8, temperature: 0});
check(response.object === "response" && response.output[0].type === "message", "a response's shape", response);
check(response.output_text === content, "a response renders its input as chat does", {output_text: response.output_text, content});
check(["completed", "incomplete"].includes(response.status), "a response's status", response.status);
const types = [];
let deltas = "";
let final;
for await (const event of await client.responses.create({model, input: "Say hello", max_output_tokens: 8, temperature: 0, stream: true})) {
  types.push(event.type);
  if (event.type === "response.output_text.delta") {
    deltas += event.delta;
  }
  if (event.type === "response.completed" || event.type === "response.incomplete") {
    final = event.response;
  }
}
check(types[0] === "response.created" && final !== undefined, "the Responses event stream starts and ends", types);
check(deltas === response.output_text && final.output[0].content[0].text === deltas, "streamed response text equals the whole one",
  {deltas, whole: response.output_text});
seen.chat = content;
seen.response = response.output_text;
seen.responseEvents = types;

// structured outputs and tool calls: sampled (seeded), held to their schema
const schema = {type: "object", properties: {answer: {type: "string", enum: ["yes", "no"]}, n: {type: "integer", minimum: 0, maximum: 99}},
  required: ["answer", "n"], additionalProperties: false};
const structured = await client.chat.completions.create({model, messages, max_tokens: 400, temperature: 0.8, seed: 3,
  response_format: {type: "json_schema", json_schema: {name: "answer", schema, strict: true}}});
check(structured.choices[0].finish_reason === "stop", "a json_schema answer ends", structured.choices[0]);
const answer = JSON.parse(structured.choices[0].message.content);
check(["yes", "no"].includes(answer.answer) && Number.isInteger(answer.n) && answer.n >= 0 && answer.n <= 99 && Object.keys(answer).length === 2,
  "a json_schema answer follows its schema", answer);
const weather = {type: "function", function: {name: "get_weather", description: "Weather for a city", parameters: {type: "object",
  properties: {city: {type: "string", maxLength: 8}}, required: ["city"], additionalProperties: false}}};
const toolRequest = {model, messages: [{role: "user", content: "Weather in Oslo?"}], tools: [weather], tool_choice: "required", max_tokens: 400,
  temperature: 0.7, seed: 1};
const called = await client.chat.completions.create(toolRequest);
const call = called.choices[0].message.tool_calls?.[0];
check(called.choices[0].finish_reason === "tool_calls" && call?.type === "function" && call.function.name === "get_weather",
  "a required tool call", called.choices[0]);
const args = JSON.parse(call.function.arguments);
check(typeof args.city === "string" && [...args.city].length <= 8 && Object.keys(args).length === 1, "the call's arguments follow the schema", args);
let callName = "", callArguments = "", callFinish;
for await (const chunk of await client.chat.completions.create({...toolRequest, stream: true})) {
  for (const delta of chunk.choices[0]?.delta?.tool_calls ?? []) {
    callName += delta.function?.name ?? "";
    callArguments += delta.function?.arguments ?? "";
  }
  callFinish = chunk.choices[0]?.finish_reason ?? callFinish;
}
check(callFinish === "tool_calls" && callName === "get_weather" && callArguments === call.function.arguments, "a streamed tool call is the whole one",
  {callFinish, callName, callArguments});
seen.structured = structured.choices[0].message.content;
seen.toolCall = call.function;
console.log(JSON.stringify(seen));
