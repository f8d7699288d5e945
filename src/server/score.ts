/** Stateless batch scoring: run an environment's rubric on completions a trainer already has. */
import type { Environment } from "../env/environment.ts";
import { zodIssues } from "../env/episode.ts";
import { ApiError } from "../env/errors.ts";
import type { JsonObject, Message } from "../env/messages.ts";
import type { ScoreBatch, ScoreItem, ScoreRequest } from "./protocol.ts";
import { referencedExample } from "./examples.ts";
import { scoreGroup, type RewardInput, type RubricScore } from "../env/rubric.ts";
import { withSandbox, type Services } from "../env/services.ts";
import { logEnvironmentError } from "./log.ts";

function asMessages(value: string | Message[] | undefined, role: "user" | "assistant"): Message[] {
  if (value === undefined) return [];
  return typeof value === "string" ? [{ role, content: value } as Message] : value;
}

/** The engine's view of a request: items are groups of one. */
export function scoreBatch(req: ScoreRequest): ScoreBatch {
  return req.groups ? { groups: req.groups, grouped: true } : { groups: req.items!.map((item) => [item]), grouped: false };
}

/** The answer in the request's shape: `results` for items, `groups` for groups. */
export function scoreAnswer(batch: ScoreBatch, scores: RubricScore[][]): { results: RubricScore[] } | { groups: RubricScore[][] } {
  return batch.grouped ? { groups: scores } : { results: scores.map((g) => g[0]!) };
}

async function rewardInput(env: Environment, item: ScoreItem, where: string, services: Services): Promise<RewardInput<JsonObject, unknown>> {
  const completion = asMessages(item.completion as string | Message[], "assistant");
  // Named by reference: graded against the server's own prompt, answer and info.
  if (item.example !== undefined) {
    return { ...(await referencedExample(env, item.example, `${where}.example`)), completion, state: {}, ...withSandbox(services) };
  }
  let args: unknown;
  try {
    args = env.parseArgs(item.args);
  } catch (err) {
    throw new ApiError("VALIDATION_ERROR", `${where}.args are invalid for ${env.name}`, zodIssues(err));
  }
  return {
    prompt: asMessages(item.prompt as string | Message[] | undefined, "user"),
    completion,
    answer: item.answer ?? "",
    info: (item.info ?? {}) as JsonObject,
    state: {},
    args,
    ...withSandbox(services),
  };
}

/**
 * Score groups (each a group of completions of one prompt; a request's items come as groups of
 * one). `first` is the index of groups[0] in the client's request, for the messages that name an
 * item (a request scored in slices, see env-threads.ts); `grouped`: the client sent groups.
 */
export async function scoreGroups(env: Environment, batch: ScoreBatch, services: Services = {}, first = 0): Promise<RubricScore[][]> {
  const where = (g: number, k: number) => (batch.grouped ? `groups[${first + g}][${k}]` : `items[${first + g}]`);
  const inputs = await Promise.all(batch.groups.map((group, g) => Promise.all(group.map((item, k) => rewardInput(env, item, where(g, k), services)))));
  // A batch may fail item after item the same way: one log line (the first, with its stack) per request.
  let failed = 0;
  let firstFailure: { where: string; error: unknown } | undefined;
  // One request, one judge budget: a refusal for it stops every group's judge calls (429).
  const judgeStop = new AbortController();
  const results = await Promise.all(
    inputs.map((group, g) =>
      scoreGroup(
        env.rubric,
        group,
        (k, name, error) => {
          failed++;
          firstFailure ??= { where: `score ${where(g, k)}: reward ${name}`, error };
        },
        judgeStop,
      ),
    ),
  );
  if (firstFailure) logEnvironmentError(env.name, undefined, failed > 1 ? `${firstFailure.where} (and ${failed - 1} more)` : firstFailure.where, firstFailure.error);
  return results;
}

/** Score items each alone (`POST B/score` with `items`): groups of one. */
export async function scoreItems(env: Environment, items: readonly ScoreItem[], services: Services = {}, first = 0): Promise<RubricScore[]> {
  const scores = await scoreGroups(env, { groups: items.map((item) => [item]), grouped: false }, services, first);
  return scores.map((g) => g[0]!);
}
