/**
 * The module a Python target's environments are imported from (Node only): its URL carries the
 * target (`served.ts?target=/abs/env.py`, see pythonModuleUrl), so the CLI's loader and every
 * environment thread import the same environments the way they import a TypeScript module's
 * (src/env/source.ts), each thread with its own Python worker.
 */
import { checkStamp } from "../source-files.ts";
import { PYTHON_CODE, pythonEnvironments, stampedUrl } from "./load.ts";

const params = new URL(import.meta.url).searchParams;
const target = params.get("target");
if (!target) throw new Error("src/node/python-envs/served.ts is imported with ?target=PYTHON_TARGET (see pythonModuleUrl)");
// A thread loads what the server loaded, or nothing (the files changed since: restart the server).
const stamp = params.get("files");
const at = stampedUrl(target);
if (stamp !== null && at !== undefined) checkStamp(at, stamp, PYTHON_CODE);

export default await pythonEnvironments(target);
