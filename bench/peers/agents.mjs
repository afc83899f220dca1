// The N-step workload on the OpenAI Agents SDK (JS), with a scripted model.
//
//   node agents.mjs run N DIR [--confirm] [--save each|pause]
//   node agents.mjs resume DIR [--save each|pause]
//
// Durability. The SDK has no store of its own: its documented pause/resume
// boundary is RunState, which a program serializes (state.toString()) and later
// restores with RunState.fromString(agent, text). Two ways of using it:
//
//   --save each (default): every step resumable, as nexa and LangGraph's
//     checkpointer make it. The run is streamed and, after each tool result,
//     the current RunState is written to DIR/state.json durably (a temporary
//     file, fsync, rename over the old one, fsync of the directory). A state
//     saved after step k resumes at step k+1 in a new process.
//   --save pause: the state is written only when the run pauses for an
//     approval or ends, as the SDK's human-in-the-loop examples do; a crash
//     in between loses the run.
//
// With --confirm the model calls a `confirm` tool that needs approval after
// the N steps: the run stops with an interruption, its state is saved, and
// `resume` (a new process) loads it, approves and finishes: the SDK's own
// human-in-the-loop pattern, and the equivalent of
// `nexa agent --resume RUN --approve CALL`.
//
// It prints one JSON line: {"steps", "output", "ms_in_process", "load_ms"}.
import fs from 'node:fs';
import path from 'node:path';
import { Agent, Runner, RunState, tool } from '@openai/agents';
import { z } from 'zod';

const args = process.argv.slice(2);
const saveIdx = args.indexOf('--save');
const save = saveIdx >= 0 ? args.splice(saveIdx, 2)[1] : 'each';
if (save !== 'each' && save !== 'pause') {
  console.error(`--save must be each or pause, not ${save}`);
  process.exit(2);
}
const [mode, a1, a2, a3] = args;

// ScriptedModel answers from the request alone, like nexa's script provider:
// a conversation holding k tool results gets call k+1, up to N calls, then
// (with confirm) one `confirm` call, then the final answer.
class ScriptedModel {
  constructor(n, confirm) {
    this.n = n;
    this.confirm = confirm;
  }
  reply(request) {
    const items = typeof request.input === 'string' ? [] : request.input;
    let done = 0;
    for (const it of items) if (it.type === 'function_call_result') done++;
    let output;
    if (done < this.n) {
      output = [{ type: 'function_call', callId: `call_${done + 1}`, name: 'add',
        arguments: JSON.stringify({ a: done, b: 1 }), status: 'completed' }];
    } else if (this.confirm && done === this.n) {
      output = [{ type: 'function_call', callId: 'call_confirm', name: 'confirm',
        arguments: '{}', status: 'completed' }];
    } else {
      output = [{ type: 'message', role: 'assistant', status: 'completed',
        content: [{ type: 'output_text', text: 'done' }] }];
    }
    return { usage: { requests: 1, inputTokens: 1, outputTokens: 1, totalTokens: 2 },
      output, responseId: `resp_${done + 1}` };
  }
  async getResponse(request) {
    return this.reply(request);
  }
  async *getStreamedResponse(request) {
    const r = this.reply(request);
    yield { type: 'response_started' };
    yield { type: 'response_done', response: { id: r.responseId, usage: r.usage, output: r.output } };
  }
}

function makeAgent(n, confirm) {
  const add = tool({
    name: 'add', description: 'Add two numbers',
    parameters: z.object({ a: z.number().int(), b: z.number().int() }),
    execute: async ({ a, b }) => String(a + b),
  });
  const confirmTool = tool({
    name: 'confirm', description: 'Confirm the result', parameters: z.object({}),
    needsApproval: true, execute: async () => 'confirmed',
  });
  return new Agent({ name: 'Adder', instructions: 'Add numbers with the add tool.',
    model: new ScriptedModel(n, confirm), tools: [add, confirmTool] });
}

function saveDurably(dir, text) {
  const tmp = path.join(dir, 'state.json.tmp');
  const fd = fs.openSync(tmp, 'w');
  fs.writeSync(fd, text);
  fs.fsyncSync(fd);
  fs.closeSync(fd);
  fs.renameSync(tmp, path.join(dir, 'state.json'));
  const d = fs.openSync(dir, 'r');
  fs.fsyncSync(d);
  fs.closeSync(d);
}

const runner = new Runner({ tracingDisabled: true });

async function drive(agent, input, dir, maxTurns) {
  const result = await runner.run(agent, input, { stream: true, maxTurns });
  let steps = 0;
  for await (const ev of result) {
    if (ev.type === 'run_item_stream_event' && ev.name === 'tool_output') {
      steps++;
      if (save === 'each') saveDurably(dir, result.state.toString());
    }
  }
  await result.completed;
  // the state at the pause (or the end): both modes save it
  saveDurably(dir, result.state.toString());
  return { steps, result };
}

const t0 = performance.now();
if (mode === 'run') {
  const n = Number(a1);
  if (!Number.isInteger(n) || n < 1 || !a2) {
    console.error('usage: node agents.mjs run N DIR [--confirm] [--save each|pause] (N a whole number >= 1)');
    process.exit(2);
  }
  const dir = a2;
  const confirm = a3 === '--confirm';
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'n'), String(n));
  const agent = makeAgent(n, confirm);
  const { steps, result } = await drive(agent, 'add', dir, 2 * n + 10);
  const out = result.interruptions?.length ? 'interrupted' : result.finalOutput;
  console.log(JSON.stringify({ steps, output: out, ms_in_process: performance.now() - t0 }));
} else if (mode === 'resume') {
  const dir = a1;
  const n = Number(fs.readFileSync(path.join(dir, 'n'), 'utf8'));
  const agent = makeAgent(n, true);
  const text = fs.readFileSync(path.join(dir, 'state.json'), 'utf8');
  const state = await RunState.fromString(agent, text);
  const loadMs = performance.now() - t0;
  for (const it of state.getInterruptions()) state.approve(it);
  const { steps, result } = await drive(agent, state, dir, 2 * n + 10);
  console.log(JSON.stringify({ steps, output: result.finalOutput, load_ms: loadMs,
    ms_in_process: performance.now() - t0 }));
} else {
  console.error('usage: node agents.mjs run N DIR [--confirm] | resume DIR');
  process.exit(2);
}
// Everything is saved by now: leave at once rather than wait for timers the
// libraries leave behind (they add idle seconds to the process's wall time).
process.exit(0);
