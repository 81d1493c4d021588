// The AI SDK's own chat (AbstractChat from 'ai', what useChat wraps, with a plain state
// instead of React's) and its DefaultChatTransport, which validates every chunk against
// the SDK's zod schema (uiMessageChunkSchema), talking to a served reactcore agent.
//
// node ai_sdk_chat.mjs <scenario> <base url> <principal> <chat id> [argument]
//
// Scenarios (each prints JSON lines; the last is {"done": true, "messages", "status",
// "error"}):
//   run              send "hi" and read the whole answer
//   cancel <tool>    send "hi"; once the other call's output is in, cancel the running
//                    call of <tool> through POST runs/{runId}/calls/{id}/cancel
//   native <choice>  send "hi"; answer the approval request natively
//                    (addToolApprovalResponse, approved = choice === "approve"); the chat
//                    sends the answer itself (lastAssistantMessageIsCompleteWithApprovalResponses)
//   steer <choice>   send "hi"; answer the approval request through
//                    POST runs/{runId}/decisions while the stream is open
import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
} from 'ai';

const [scenario, base, principal, chatId, argument] = process.argv.slice(2);
const headers = { authorization: `Bearer ${principal}` };
const out = (value) => process.stdout.write(JSON.stringify(value) + '\n');

class PlainState {
  constructor() {
    this.status = 'ready';
    this.error = undefined;
    this.messages = [];
    this.onChange = () => {};
  }
  pushMessage(message) {
    this.messages = this.messages.concat(message);
    this.onChange();
  }
  popMessage() {
    this.messages = this.messages.slice(0, -1);
    this.onChange();
  }
  replaceMessage(index, message) {
    this.messages = [...this.messages.slice(0, index), message, ...this.messages.slice(index + 1)];
    this.onChange();
  }
  snapshot(value) {
    return structuredClone(value);
  }
}

class Chat extends AbstractChat {
  constructor(init) {
    const state = new PlainState();
    super({ ...init, state });
    this.plain = state;
  }
}

async function steer(path, body) {
  const response = await fetch(`${base}/${path}`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify(body ?? {}),
  });
  const answer = { steered: path, status: response.status, body: await response.json() };
  out(answer);
  return answer;
}

const toolParts = (message) =>
  (message?.parts ?? []).filter((p) => p.type.startsWith('tool-') || p.type === 'dynamic-tool');

let finishes = 0;
let finished = () => {};
const chat = new Chat({
  id: chatId,
  transport: new DefaultChatTransport({ api: base, headers }),
  sendAutomaticallyWhen:
    scenario === 'native' ? lastAssistantMessageIsCompleteWithApprovalResponses : undefined,
  onFinish: ({ finishReason, isError }) => {
    finishes += 1;
    out({ finish: finishes, finishReason, isError });
    finished();
  },
  onError: (error) => out({ chatError: String(error?.message ?? error) }),
});

const acted = new Set();
chat.plain.onChange = () => {
  const last = chat.plain.messages.at(-1);
  if (last?.role !== 'assistant') return;
  const runId = last.metadata?.runId;
  const parts = toolParts(last);
  if (scenario === 'cancel' && runId && !acted.has('cancel')) {
    const target = parts.find((p) => p.type === `tool-${argument}`);
    const other = parts.find((p) => p !== target && p.state === 'output-available');
    if (target && other && target.state === 'input-available') {
      acted.add('cancel');
      steer(`runs/${runId}/calls/${encodeURIComponent(target.toolCallId)}/cancel`, {
        reason: 'the user stopped it',
      });
    }
  }
  if (scenario === 'steer' && runId && !acted.has('steer')) {
    const waiting = parts.filter((p) => p.state === 'approval-requested');
    if (waiting.length > 0) {
      acted.add('steer');
      const decision =
        argument === 'approve' ? { type: 'approve' } : { type: 'reject', reason: 'not now' };
      const decisions = Object.fromEntries(waiting.map((p) => [p.toolCallId, decision]));
      steer(`runs/${runId}/decisions`, { decisions });
    }
  }
};

const wait = (count) =>
  new Promise((resolve) => {
    if (finishes >= count) return resolve();
    finished = () => finishes >= count && resolve();
  });

const giveUp = setTimeout(() => {
  out({ done: true, timedOut: true, messages: chat.messages, status: chat.status });
  process.exit(3);
}, 45000);

await chat.sendMessage({ text: 'hi' });
await wait(1);
if (scenario === 'native') {
  const waiting = toolParts(chat.lastMessage).filter((p) => p.state === 'approval-requested');
  out({ approvalRequests: waiting.map((p) => ({ toolCallId: p.toolCallId, approval: p.approval })) });
  for (const part of waiting) {
    await chat.addToolApprovalResponse({
      id: part.approval.id,
      approved: argument === 'approve',
      reason: argument === 'approve' ? undefined : 'not now',
    });
  }
  await wait(2);
}
clearTimeout(giveUp);
out({
  done: true,
  messages: chat.messages,
  status: chat.status,
  error: chat.error ? String(chat.error.message) : null,
});
