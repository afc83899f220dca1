// The N-step workload on LangGraph JS with its SQLite checkpointer.
//
//   node langgraph.mjs run N DIR [--confirm]   run N add steps, then answer
//   node langgraph.mjs resume DIR              continue the thread saved in DIR
//
// The graph is the usual tool loop: an `agent` node (here a scripted model,
// no network) and a ToolNode, joined by toolsCondition. SqliteSaver writes a
// checkpoint after every super-step into DIR/checkpoints.sqlite (WAL,
// synchronous=FULL as better-sqlite3 opens it: every commit is fsync'd).
// Durability is "sync": each checkpoint is saved before the next step starts,
// the guarantee nexa gives (LangGraph's default, "async", saves it while the
// next step already runs).
//
// With --confirm the model calls a `confirm` tool after the N steps; that tool
// calls interrupt(), so the run stops with its state checkpointed. `resume`
// (a new process) opens the checkpointer and continues the thread with
// Command({resume: true}): LangGraph's human-in-the-loop pattern, the
// equivalent of `nexa agent --resume RUN --approve CALL`.
//
// It prints one JSON line: {"steps", "output", "ms_in_process", "load_ms"}.
import fs from 'node:fs';
import path from 'node:path';
import { AIMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { Command, END, MessagesAnnotation, START, StateGraph, interrupt } from '@langchain/langgraph';
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { z } from 'zod';

const [mode, a1, a2, a3] = process.argv.slice(2);

// scripted answers from the conversation alone, like nexa's script provider:
// a conversation holding k tool results gets call k+1, up to N calls, then
// (with confirm) one `confirm` call, then the final answer.
function scriptedModel(n, confirm) {
  return async (state) => {
    let done = 0;
    for (const m of state.messages) if (m.getType() === 'tool') done++;
    if (done < n) {
      return { messages: [new AIMessage({ content: '',
        tool_calls: [{ id: `call_${done + 1}`, name: 'add', args: { a: done, b: 1 }, type: 'tool_call' }] })] };
    }
    if (confirm && done === n) {
      return { messages: [new AIMessage({ content: '',
        tool_calls: [{ id: 'call_confirm', name: 'confirm', args: {}, type: 'tool_call' }] })] };
    }
    return { messages: [new AIMessage('done')] };
  };
}

function makeGraph(n, confirm, dir) {
  const add = tool(async ({ a, b }) => String(a + b),
    { name: 'add', description: 'Add two numbers', schema: z.object({ a: z.number().int(), b: z.number().int() }) });
  const confirmTool = tool(async () => {
    const ok = interrupt({ question: 'confirm?' });
    return ok ? 'confirmed' : 'denied';
  }, { name: 'confirm', description: 'Confirm the result', schema: z.object({}) });
  const checkpointer = SqliteSaver.fromConnString(path.join(dir, 'checkpoints.sqlite'));
  const graph = new StateGraph(MessagesAnnotation)
    .addNode('agent', scriptedModel(n, confirm))
    .addNode('tools', new ToolNode([add, confirmTool]))
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', toolsCondition, ['tools', END])
    .addEdge('tools', 'agent')
    .compile({ checkpointer });
  return { graph, checkpointer };
}

function countTools(messages) {
  let k = 0;
  for (const m of messages) if (m.getType() === 'tool') k++;
  return k;
}

const t0 = performance.now();
if (mode === 'run') {
  const n = Number(a1);
  if (!Number.isInteger(n) || n < 1 || !a2) {
    console.error('usage: node langgraph.mjs run N DIR [--confirm] (N a whole number >= 1)');
    process.exit(2);
  }
  const dir = a2;
  const confirm = a3 === '--confirm';
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'n'), String(n));
  const { graph } = makeGraph(n, confirm, dir);
  const config = { configurable: { thread_id: 'bench' }, recursionLimit: 2 * n + 10, durability: 'sync' };
  const out = await graph.invoke({ messages: [{ role: 'user', content: 'add' }] }, config);
  const last = out.messages[out.messages.length - 1];
  const output = out.__interrupt__ ? 'interrupted' : last.content;
  console.log(JSON.stringify({ steps: countTools(out.messages), output, ms_in_process: performance.now() - t0 }));
} else if (mode === 'resume') {
  const dir = a1;
  const n = Number(fs.readFileSync(path.join(dir, 'n'), 'utf8'));
  const { graph } = makeGraph(n, true, dir);
  const config = { configurable: { thread_id: 'bench' }, recursionLimit: 2 * n + 10, durability: 'sync' };
  // Loading the checkpoint on its own, for the figure "load_ms"; invoke loads it again.
  const snap = await graph.getState(config);
  const loadMs = performance.now() - t0;
  if (!snap.next || snap.next.length === 0) throw new Error('nothing to resume');
  const out = await graph.invoke(new Command({ resume: true }), config);
  const last = out.messages[out.messages.length - 1];
  console.log(JSON.stringify({ steps: countTools(out.messages), output: last.content, load_ms: loadMs,
    ms_in_process: performance.now() - t0 }));
} else {
  console.error('usage: node langgraph.mjs run N DIR [--confirm] | resume DIR');
  process.exit(2);
}
// Everything is saved by now: leave at once rather than wait for timers the
// libraries leave behind (they add idle seconds to the process's wall time).
process.exit(0);
