/**
 * open-qa: open-answer factual questions graded by a judge model, in the manner of BrowseComp's
 * grader (OpenAI simple-evals, browsecomp_eval.py): the model answers in free text ending with
 * "Exact Answer:" and "Confidence:"; the operator's judge compares the extracted answer with the
 * reference and says `correct: yes|no`; the verdict and its reasoning line (clipped) are reported
 * in `observation.info.judge`, never the judge's whole reply.
 *
 * The judge grades only this environment's own questions: the question and the reference answer
 * are looked up by the example's id (`info.id`), never taken from the reward input, so POST /score
 * cannot make the operator's model judge (or answer) a client's own prompt. Only the response is
 * the client's, as it must be.
 *
 * Single turn. The data (48 questions with short, unambiguous answers) ships in `data/`.
 */
import { defineEnvironment, defineJudge, type Example, labelledValues, type Message, yesNoVerdict } from "envworker";
import evalRows from "./data/eval.json" with { type: "json" };
import trainRows from "./data/train.json" with { type: "json" };

interface Row {
  id: string;
  question: string;
  answer: string;
  topic: string;
}

/** BrowseComp's query template: the answer and a confidence on lines of their own. */
export function questionPrompt(question: string): string {
  return `${question}

Your response should be in the following format:
Explanation: {your explanation for your final answer}
Exact Answer: {your succinct, final answer}
Confidence: {your confidence score between 0% and 100% for your answer}`;
}

/** BrowseComp's grader template; `{question}`, `{response}` and `{answer}` are filled in one pass. */
export const GRADER_TEMPLATE = `Judge whether the following [response] to [question] is correct or not based on the precise and unambiguous [correct_answer] below.

[question]: {question}

[response]: {response}

Your judgement must be in the format and criteria specified below:

extracted_final_answer: The final exact answer extracted from the [response]. Put the extracted answer as 'None' if there is no exact, final answer to extract from the response.

[correct_answer]: {answer}

reasoning: Explain why the extracted_final_answer is correct or incorrect based on [correct_answer], focusing only on if there are meaningful differences between [correct_answer] and the extracted_final_answer. Do not comment on any background to the problem, do not attempt to solve the problem, do not argue for any answer different than [correct_answer], focus only on whether the answers match.

correct: Answer 'yes' if extracted_final_answer matches the [correct_answer] given above, or is within a small margin of error for numerical problems. Answer 'no' otherwise, i.e. if there is any inconsistency, ambiguity, non-equivalency, or if the extracted answer is incorrect.

confidence: The extracted confidence score between 0% and 100% from [response]. Put 100 if there is no confidence score available.`;

/** The judge: BrowseComp's grader, deterministic, its verdict the last `correct: yes|no` line. */
export const grader = defineJudge({
  prompt: GRADER_TEMPLATE,
  parse: yesNoVerdict("correct"),
  // Shown to the client (clipped): the judge's last reasoning line.
  reason: (reply) => labelledValues(reply, "reasoning").at(-1),
  temperature: 0,
  maxTokens: 1024,
});

/** The model's "Exact Answer:" line (the last one), or undefined. */
export function exactAnswer(completion: readonly Message[]): string | undefined {
  for (let i = completion.length - 1; i >= 0; i--) {
    const m = completion[i]!;
    if (m.role !== "assistant" || typeof m.content !== "string") continue;
    const found = labelledValues(m.content, "exact answer").filter((v) => v !== "");
    if (found.length > 0) return found[found.length - 1];
  }
  return undefined;
}

/** An answer as compared between rollouts: lower case, letters and digits only. */
function normalized(answer: string): string {
  return answer.normalize("NFKD").toLowerCase().replace(/[^\p{L}\p{N}]+/gu, " ").trim();
}

const toExample = (split: string) => (row: Row): Example => ({
  id: row.id,
  prompt: questionPrompt(row.question),
  answer: row.answer,
  info: { id: row.id, question: row.question, topic: row.topic, split },
});

const DATA: Record<string, readonly Example[]> = {
  train: (trainRows as Row[]).map(toExample("train")),
  eval: (evalRows as Row[]).map(toExample("eval")),
};

/** Every row by its id: the judge's question and reference come from here. */
const ROWS = new Map<string, Row>([...(trainRows as Row[]), ...(evalRows as Row[])].map((r) => [r.id, r]));

/** The row an input grades against: its example's id, never a question or answer the input carries. */
export function rowOf(info: unknown): Row {
  const id = info && typeof info === "object" ? (info as { id?: unknown }).id : undefined;
  const row = typeof id === "string" ? ROWS.get(id) : undefined;
  if (!row) {
    throw new Error(
      "open-qa's judge grades only open-qa's own questions: score an item by its example (`example` from POST /examples, or an episode's info.example) or by `info.id` (q01-q48)",
    );
  }
  return row;
}

export default defineEnvironment({
  name: "open-qa",
  description: "Open-answer factual questions graded by a judge model (BrowseComp's grader): reward 1 when the judge finds the exact answer correct.",
  version: "0.1.0",
  splits: ["train", "eval"],
  dataset: ({ split }) => DATA[split]!,
  maxTurns: 1,
  rubric: [
    // The judge reads the bare question and the reference of the example's row (never the
    // input's own prompt, answer or info.question), and the model's whole reply.
    {
      name: "correct",
      weight: 1,
      fn: (input) => {
        const row = rowOf(input.info);
        return grader.ask(input, { question: row.question, answer: row.answer });
      },
    },
    { name: "has_exact_answer", weight: 0, fn: ({ completion }) => exactAnswer(completion) !== undefined },
    {
      // Self-consistency: the share of the group (this completion included) giving the same exact
      // answer. A group reward: it reads the other rollouts of the prompt; alone it is 1 or 0.
      name: "group_agreement",
      weight: 0,
      group: (inputs) => {
        const answers = inputs.map((i) => {
          const a = exactAnswer(i.completion);
          return a === undefined ? undefined : normalized(a);
        });
        return answers.map((a) => (a === undefined ? 0 : answers.filter((b) => b === a).length / answers.length));
      },
    },
  ],
});
