// The official AG-UI client (@ag-ui/client's HttpAgent) against reactcore.ag_ui.ag_ui_app.
//
//   node ag_ui_client.mjs <scenario> <url> <principal> [argument]
//
// Prints one JSON object per line: {"event": …} for each event the client read (after its
// own verification), {"steer": …} for each steering answer, and last {"messages": …,
// "newMessages": …, "pending": …} with what the client assembled.
//
// Scenarios:
//   run       one run of a user message.
//   cancel    the same, and when the tool call named [argument] starts running (the
//             server's reactcore.tool_call_started event), cancel it through
//             POST runs/{runId}/calls/{id}/cancel.
//   approve   when the run pauses (reactcore.approval), answer every pending call with
//             POST runs/{runId}/decisions, decision type [argument] (approve / reject).
//   frontend  declare the client tool "confirm"; when the run stops at its call, answer
//             it with a tool message and run again.
import { HttpAgent } from "@ag-ui/client";

const [scenario, url, principal, argument] = process.argv.slice(2);
const print = (value) => process.stdout.write(JSON.stringify(value) + "\n");

async function steer(path, body) {
  const response = await fetch(`${url}/${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${principal}` },
    body: JSON.stringify(body),
  });
  print({ steer: { path, status: response.status, body: await response.json() } });
}

const agent = new HttpAgent({
  url,
  headers: { authorization: `Bearer ${principal}` },
  threadId: "thread-1",
  initialMessages: [{ id: "u1", role: "user", content: "What is the weather in Paris and Rome?" }],
});

const confirm = {
  name: "confirm",
  description: "Ask the user to confirm something.",
  parameters: { type: "object", properties: { question: { type: "string" } } },
};

let runId = "run-1";
const subscriber = {
  async onEvent({ event }) {
    print({ event });
    if (event.type !== "CUSTOM") return;
    if (scenario === "cancel" && event.name === "reactcore.tool_call_started"
        && event.value.name === argument) {
      await steer(`runs/${runId}/calls/${event.value.toolCallId}/cancel`, { reason: "not needed" });
    }
    if (scenario === "approve" && event.name === "reactcore.approval") {
      const decisions = Object.fromEntries(
        event.value.calls.map((c) => [c.id, { type: argument, reason: "no, thanks" }]),
      );
      await steer(event.value.decisions, { decisions });
    }
  },
};

const tools = scenario === "frontend" ? [confirm] : [];
let result = await agent.runAgent({ runId, tools }, subscriber);
let pending = [];
if (scenario === "frontend") {
  const calls = agent.messages.flatMap((m) => m.toolCalls ?? []);
  pending = calls.filter((c) => c.function.name === "confirm").map((c) => c.id);
  print({ stopped: { messages: agent.messages } });
  for (const id of pending) {
    agent.addMessage({ id: `answer-${id}`, role: "tool", toolCallId: id, content: "yes, confirmed" });
  }
  runId = "run-2";
  result = await agent.runAgent({ runId, tools }, subscriber);
}
print({ messages: agent.messages, newMessages: result.newMessages, pending });
