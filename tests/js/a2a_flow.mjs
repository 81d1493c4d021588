// The A2A JS SDK's client (@a2a-js/sdk) against a reactcore a2a_app: card, send, stream,
// get, cancel while a tool runs, input-required approved and rejected.
// Usage: node a2a_flow.mjs <base url> <user>; prints one JSON object per step.
import { Role, TaskState } from "@a2a-js/sdk";
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from "@a2a-js/sdk/client";

const [baseUrl, user] = process.argv.slice(2);
const fetchImpl = (input, init = {}) => {
  const headers = new Headers(init.headers || {});
  headers.set("x-user", user);
  return fetch(input, { ...init, headers });
};
const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  }),
);
const print = (value) => process.stdout.write(JSON.stringify(value) + "\n");
const stateName = (state) => TaskState[state].replace("TASK_STATE_", "").toLowerCase();
let counter = 0;
const part = (content) => ({ content, metadata: undefined, filename: "", mediaType: "" });
const message = (parts, taskId = "") => ({
  messageId: `js-${++counter}`,
  contextId: "",
  taskId,
  role: Role.ROLE_USER,
  parts,
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});
const request = (msg) => ({ tenant: "", message: msg, configuration: undefined, metadata: undefined });
const textOf = (parts) =>
  parts.filter((p) => p.content?.$case === "text").map((p) => p.content.value).join("");
const stateOf = (event) => {
  const payload = event.payload;
  if (payload?.$case === "task") return payload.value.status.state;
  if (payload?.$case === "statusUpdate") return payload.value.status.state;
  return undefined;
};

const client = await factory.createFromUrl(baseUrl);
const card = await new DefaultAgentCardResolver({ fetchImpl }).resolve(baseUrl);
print({ step: "card", name: card.name, streaming: card.capabilities.streaming });

// send: the completed task in one answer
const sent = await client.sendMessage(request(message([part({ $case: "text", value: "please add" })])));
print({ step: "send", state: stateName(sent.status.state), answer: textOf(sent.artifacts[0].parts) });

// stream: working, progress, the answer artifact, completed
const states = [];
let artifact = "";
let streamedTask = "";
for await (const event of client.sendMessageStream(request(message([part({ $case: "text", value: "please add" })])))) {
  const state = stateOf(event);
  if (state !== undefined) states.push(stateName(state));
  if (event.payload?.$case === "task") streamedTask = event.payload.value.id;
  if (event.payload?.$case === "artifactUpdate") artifact += textOf(event.payload.value.artifact.parts);
}
print({ step: "stream", states, artifact });

// get
const got = await client.getTask({ tenant: "", id: streamedTask, historyLength: undefined });
print({ step: "get", state: stateName(got.status.state) });

// cancel while the slow tool runs (its start event is the cue)
let cancelled;
let streamEnd = "";
for await (const event of client.sendMessageStream(request(message([part({ $case: "text", value: "slow job" })])))) {
  const state = stateOf(event);
  if (state !== undefined) streamEnd = stateName(state);
  const update = event.payload?.$case === "statusUpdate" ? event.payload.value : undefined;
  const data = update?.status?.message?.parts?.find((p) => p.content?.$case === "data");
  if (data && data.content.value.reactcore_event?.type === "tool_call_started" && !cancelled) {
    cancelled = await client.cancelTask({ tenant: "", id: update.taskId, metadata: undefined });
  }
}
print({ step: "cancel", state: stateName(cancelled.status.state), streamEnd });

// input-required, approved with a data part
const paused = await client.sendMessage(request(message([part({ $case: "text", value: "mail bo" })])));
const pending = paused.status.message.parts.find((p) => p.content?.$case === "data").content.value.pending;
print({ step: "paused", state: stateName(paused.status.state), pending });
const decisions = { decisions: { [pending[0].id]: { type: "approve" } } };
const approved = await client.sendMessage(request(message([part({ $case: "data", value: decisions })], paused.id)));
print({ step: "approved", state: stateName(approved.status.state), answer: textOf(approved.artifacts[0].parts) });

// input-required, rejected with the text "reject"
const again = await client.sendMessage(request(message([part({ $case: "text", value: "mail bo" })])));
const rejected = await client.sendMessage(request(message([part({ $case: "text", value: "reject" })], again.id)));
print({ step: "rejected", state: stateName(rejected.status.state), answer: textOf(rejected.artifacts[0].parts) });
