/**
 * An environment's examples without episodes: list prompts (`POST B/examples`) and name each one
 * by an example reference that `/score` and `/reset` take instead of an answer.
 *
 * A reference is not trusted: it only says where the example comes from (split + dataset index,
 * or seed; the args; the environment) and a fingerprint of the prompt. The server re-derives the
 * example from it with the same code a reset runs, and refuses a reference whose prompt no longer
 * matches (the data changed under a long training run) or that does not decode (forged, garbled,
 * another environment's). Answers, `info` and hidden tests stay on the server.
 */
import { z } from "zod";
import type { Environment } from "../env/environment.ts";
import { resetEpisode, zodIssues, type StepResult } from "../env/episode.ts";
import { ApiError } from "../env/errors.ts";
import type { JsonObject, Message } from "../env/messages.ts";
import { MAX_REFERENCE_CHARS, type ExamplesRequest, type ResetRequest } from "./protocol.ts";

const PREFIX = "ex1.";

const Seed = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

/** What a reference decodes to (short keys: it is repeated in every dataset row). */
const ReferenceSchema = z
  .object({
    /** environment name */
    e: z.string(),
    /** split */
    s: z.string().max(64),
    /** dataset index (dataset environments) */
    i: z.number().int().min(0).optional(),
    /** seed (generated environments) */
    n: Seed.optional(),
    /** the args as the client gave them */
    a: z.record(z.string(), z.unknown()).optional(),
    /** fingerprint of the prompt */
    h: z.string().regex(/^[0-9a-f]{16}$/),
  })
  .strict()
  .refine((r) => (r.i === undefined) !== (r.n === undefined), "exactly one of index and seed");

type Reference = z.infer<typeof ReferenceSchema>;

const DEFAULT_COUNT = 100;

function isDataset(env: Environment): boolean {
  return env.spec.dataset !== undefined;
}

function base64url(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64url(text: string): string {
  const bin = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
  return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
}

/** SHA-256 of the prompt's JSON, 64 bits in hex: detects a changed example, not an attacker. */
async function fingerprint(messages: readonly Message[]): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(JSON.stringify(messages)));
  return [...new Uint8Array(digest).slice(0, 8)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function encodeReference(env: Environment, where: { split: string; index: number | null; seed: number }, args: unknown, prompt: readonly Message[]): Promise<string> {
  const ref: Reference = {
    e: env.name,
    s: where.split,
    ...(isDataset(env) ? { i: where.index! } : { n: where.seed }),
    ...(args !== undefined ? { a: args as Record<string, unknown> } : {}),
    h: await fingerprint(prompt),
  };
  const text = PREFIX + base64url(JSON.stringify(ref));
  if (text.length > MAX_REFERENCE_CHARS) {
    throw new ApiError("VALIDATION_ERROR", `these args make an example reference longer than ${MAX_REFERENCE_CHARS} characters`);
  }
  return text;
}

function invalid(where: string, why: string): ApiError {
  return new ApiError("VALIDATION_ERROR", `${where} is not an example reference of this environment: ${why}`);
}

function decodeReference(env: Environment, text: string, where: string): Reference {
  if (!text.startsWith(PREFIX)) throw invalid(where, "it does not start with " + JSON.stringify(PREFIX));
  let json: unknown;
  try {
    json = JSON.parse(fromBase64url(text.slice(PREFIX.length)));
  } catch {
    throw invalid(where, "it does not decode");
  }
  const parsed = ReferenceSchema.safeParse(json);
  if (!parsed.success) throw invalid(where, "it does not decode");
  const ref = parsed.data;
  if (ref.e !== env.name) throw invalid(where, `it names ${JSON.stringify(ref.e)}, not ${env.name}`);
  if (isDataset(env) !== (ref.i !== undefined)) throw invalid(where, "it does not match how this environment makes examples");
  return ref;
}

/** Build one example exactly as a reset would (the engine's own code, no episode stored). */
function derive(env: Environment, opts: { split?: string | undefined; index?: number | undefined; seed?: number | undefined; args?: unknown }) {
  return resetEpisode(env, "example", { ...opts, seed: opts.seed ?? 0 }).state;
}

export interface ListedExample {
  prompt: Message[];
  example: string;
  split: string;
  index: number | null;
  seed: number | null;
  example_id: string | number | null;
}

/** `POST B/examples`: prompts and references, never answers. `total` is null for generated environments. */
export async function listExamples(env: Environment, req: ExamplesRequest) {
  const split = req.split ?? env.splits[0]!;
  let args: unknown;
  try {
    args = env.parseArgs(req.args);
  } catch (err) {
    throw new ApiError("VALIDATION_ERROR", `invalid args for ${env.name}`, zodIssues(err));
  }
  if (!env.splits.includes(split)) {
    throw new ApiError("VALIDATION_ERROR", `unknown split ${JSON.stringify(split)}; this environment has ${env.splits.join(", ")}`);
  }
  const rows = env.datasetFor(args, split);
  const total = rows ? rows.length : null;
  let picks: { index?: number; seed?: number }[];
  if (req.seeds) {
    picks = req.seeds.map((seed) => ({ seed }));
  } else {
    const start = req.start ?? 0;
    const count = req.count ?? DEFAULT_COUNT;
    // A dataset is walked by index; a generator by consecutive seeds from `start`.
    const end = total === null ? start + count : Math.min(start + count, total);
    picks = [];
    for (let k = start; k < end && k <= Number.MAX_SAFE_INTEGER; k++) picks.push(total === null ? { seed: k } : { index: k });
  }
  const examples: ListedExample[] = [];
  for (const pick of picks) {
    const s = derive(env, { split, args: req.args, ...pick });
    examples.push({
      prompt: s.messages,
      example: await encodeReference(env, s, req.args, s.messages),
      split,
      index: s.index,
      seed: total === null ? s.seed : null,
      example_id: s.example_id,
    });
  }
  return {
    examples,
    total,
    // What a trainer needs to set itself up without an episode: the reward functions it will
    // see in `metrics` and the tools the model gets.
    rubric: env.rubric.map((r) => ({ name: r.name, weight: r.weight ?? 1 })),
    ...(env.tools.length > 0 ? { tools: env.tools.map((t) => t.openai) } : {}),
  };
}

/** Where a reference points, as reset options, after checking the example is still the same. */
async function resolve(env: Environment, text: string, where: string) {
  const ref = decodeReference(env, text, where);
  let s;
  try {
    s = derive(env, { split: ref.s, args: ref.a, ...(ref.i !== undefined ? { index: ref.i } : { seed: ref.n }) });
  } catch (err) {
    // Out of range, a split or args the environment refuses: the reference is not one it issued.
    throw invalid(where, err instanceof ApiError ? err.message : String(err));
  }
  if ((await fingerprint(s.messages)) !== ref.h) throw invalid(where, "the example it names has changed on the server");
  return { ref, state: s };
}

/** What `/score` grades an item named by reference against: the server's own ground truth. */
export async function referencedExample(env: Environment, text: string, where: string) {
  const { state: s } = await resolve(env, text, where);
  return { prompt: s.messages, answer: s.answer, info: s.info as JsonObject, args: s.args };
}

/** `/reset` with `example`: the reference becomes the split, index or seed and args of the reset. */
export async function resetOptionsFor(env: Environment, req: ResetRequest & { example?: string | undefined }): Promise<ResetRequest> {
  const { example, ...rest } = req;
  if (example === undefined) return rest;
  if (rest.seed !== undefined || rest.index !== undefined || rest.split !== undefined || rest.args !== undefined) {
    throw new ApiError("VALIDATION_ERROR", "a reset with example takes no seed, index, split or args: the reference carries them");
  }
  const { ref } = await resolve(env, example, "example");
  return { ...rest, split: ref.s, args: ref.a, ...(ref.i !== undefined ? { index: ref.i } : { seed: ref.n }) };
}

/** Add the reference of the example an HTTP reset chose to `observation.info.example`. */
export async function withReference(env: Environment, req: ResetRequest, result: StepResult): Promise<StepResult> {
  const info = result.observation.info ?? {};
  const where = { split: String(info.split), index: (info.index as number | null) ?? null, seed: Number(info.seed) };
  let example: string;
  try {
    example = await encodeReference(env, where, req.args, result.observation.messages);
  } catch {
    return result; // args too long to carry in a reference: the episode is fine without one
  }
  return { ...result, observation: { ...result.observation, info: { ...info, example } } };
}
