/** The environments this server hosts: the single list of served environments. */
import type { Environment } from "envworker";
import alphabetSort from "./alphabet-sort/index.ts";
import countdown from "./countdown/index.ts";
import jsCode from "./js-code/index.ts";
import mathTools, { mathToolsPython } from "./math-tools/index.ts";
import openQa from "./open-qa/index.ts";
import pyCode from "./py-code/index.ts";
import reverseText from "./reverse-text/index.ts";
import wordChain from "./word-chain/index.ts";
import wordGroups from "./word-groups/index.ts";
import wordle from "./wordle/index.ts";

export const environments: readonly Environment[] = [reverseText, alphabetSort, wordle, wordChain, wordGroups, countdown, mathTools, jsCode, pyCode, mathToolsPython, openQa];

/**
 * Environments that need the Python sandbox (`Services.python`, a fork server of CPython for WASI): Node
 * only. The Workers entry leaves them out of what it serves.
 */
export const NODE_ONLY_ENVIRONMENTS: ReadonlySet<string> = new Set([pyCode.name, mathToolsPython.name]);

export default environments;
