/** Stateless batch scoring: run an environment's rubric on completions a trainer already has. */
import type { Environment } from "../env/environment.ts";
import { zodIssues } from "../env/episode.ts";
import { ApiError } from "../env/errors.ts";
import type { JsonObject, Message } from "../env/messages.ts";
import type { ScoreItem } from "./protocol.ts";
import { referencedExample } from "./examples.ts";
import { scoreRubric, type RubricScore } from "../env/rubric.ts";
import type { Services } from "../env/services.ts";
import { logEnvironmentError } from "./episode-host.ts";

function asMessages(value: string | Message[] | undefined, role: "user" | "assistant"): Message[] {
  if (value === undefined) return [];
  return typeof value === "string" ? [{ role, content: value } as Message] : value;
}

/**
 * Score `items`. `first` is the index of items[0] in the client's request, for the messages that
 * name an item (a request scored in slices, see env-threads.ts).
 */
export async function scoreItems(env: Environment, items: readonly ScoreItem[], services: Services = {}, first = 0): Promise<RubricScore[]> {
  const inputs = await Promise.all(items.map(async (item, k) => {
    const i = first + k;
    const completion = asMessages(item.completion as string | Message[], "assistant");
    // Named by reference: graded against the server's own prompt, answer and info.
    if (item.example !== undefined) {
      return { ...(await referencedExample(env, item.example, `items[${i}].example`)), completion, state: {}, ...services };
    }
    let args: unknown;
    try {
      args = env.parseArgs(item.args);
    } catch (err) {
      throw new ApiError("VALIDATION_ERROR", `items[${i}].args are invalid for ${env.name}`, zodIssues(err));
    }
    return {
      prompt: asMessages(item.prompt as string | Message[] | undefined, "user"),
      completion,
      answer: item.answer ?? "",
      info: (item.info ?? {}) as JsonObject,
      state: {},
      args,
      ...services,
    };
  }));
  // A batch may fail item after item the same way: one log line (the first, with its stack) per request.
  let failed = 0;
  let firstFailure: { where: string; error: unknown } | undefined;
  const results = await Promise.all(
    inputs.map((input, k) =>
      scoreRubric(env.rubric, input, (name, error) => {
        failed++;
        firstFailure ??= { where: `score items[${first + k}]: reward ${name}`, error };
      }),
    ),
  );
  if (firstFailure) logEnvironmentError(env.name, undefined, failed > 1 ? `${firstFailure.where} (and ${failed - 1} more)` : firstFailure.where, firstFailure.error);
  return results;
}
