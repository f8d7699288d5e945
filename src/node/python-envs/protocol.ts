/**
 * Messages between a hosting thread's PythonLink (link.ts) and its I/O thread (io-thread.ts), and
 * the description a Python worker gives of each environment (envworker.authoring's Environment.spec()).
 */
import { z } from "zod";
import type { RunResult } from "../../sandbox/types.ts";

const Static = <T extends z.ZodType>(t: T) => z.union([z.object({ static: t }).strict(), z.object({ dynamic: z.literal(true) }).strict()]);

/** One environment as the worker describes it (checked: the worker runs the author's code). */
export const PySpecSchema = z.object({
  name: z.string(),
  description: z.string(),
  version: z.string(),
  author: z.string().nullable().optional(),
  documentation_url: z.string().nullable().optional(),
  args_schema: z.record(z.string(), z.unknown()),
  splits: z.array(z.string()).min(1),
  source: z.enum(["dataset", "generate"]),
  system_prompt: Static(z.string().nullable()),
  max_turns: Static(z.number().int().min(1)),
  multi_turn: z.boolean(),
  tools: z.array(z.object({ name: z.string(), description: z.string(), parameters: z.record(z.string(), z.unknown()), timeout_ms: z.number().int().positive() })),
  rubric: z.array(z.object({ name: z.string(), weight: z.number() })).min(1),
});
export type PySpec = z.infer<typeof PySpecSchema>;

/** Why a call failed: the environment's own error (ERROR), or what happened to its worker. */
export type CallFailure =
  | { reason: "ERROR"; type: string; message: string; traceback: string }
  | { reason: "TIMEOUT" | "CRASHED" | "TOO_LARGE" | "START"; message: string };

export type ToIo =
  /** `client`: whose call it is (forked calls queue fairly per client in the I/O thread). */
  | { t: "call"; id: number; sync: boolean; method: string; params: unknown; client?: string | undefined }
  | { t: "describe" }
  | { t: "sandbox-result"; id: number; sid: number; result: RunResult }
  | { t: "sandbox-error"; id: number; sid: number; message: string }
  | { t: "forget"; id: number }
  | { t: "stop" };

export type FromIo =
  | { t: "done"; id: number; value: unknown }
  | { t: "failed"; id: number; failure: CallFailure }
  | { t: "sandbox"; id: number; sid: unknown; code: unknown; lang: unknown; options: unknown }
  | { t: "described"; envs: unknown }
  | { t: "describe-failed"; message: string };
