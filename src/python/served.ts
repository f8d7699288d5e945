/**
 * The module a Python target's environments are imported from (Node only): its URL carries the
 * target (`served.ts?target=/abs/env.py`, see pythonModuleUrl), so the CLI's loader and every
 * environment thread import the same environments the way they import a TypeScript module's
 * (src/env/source.ts), each thread with its own Python worker.
 */
import { pythonEnvironments } from "./load.ts";

const target = new URL(import.meta.url).searchParams.get("target");
if (!target) throw new Error("src/python/served.ts is imported with ?target=PYTHON_TARGET (see pythonModuleUrl)");

export default await pythonEnvironments(target);
