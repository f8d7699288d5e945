/**
 * vitest's globalSetup: dist/ is the build of the sources before any test file runs. Every
 * envworker a test starts as a process (`bin/envworker.js serve|eval|validate|...`, a package made by
 * `init` from this checkout) then runs the compiled code of exactly these sources, without tsx's
 * loader (bin/envworker.js): a server's start costs less than half the CPU, and the suite starts
 * hundreds. Nothing rebuilds dist/ during the run (test/package/library-e2e.test.ts packs it as it is), so
 * no process finds it half-written. A build takes about 25 s of CPU; when dist/ is fresh this is the
 * stamp's check only.
 */
import { execFileSync } from "node:child_process";
import { join } from "node:path";

export default function setup(): void {
  const root = join(import.meta.dirname, "..");
  execFileSync(process.execPath, [join(root, "bin/envworker.js"), "build", "--if-stale"], { cwd: root, stdio: ["ignore", "inherit", "inherit"] });
}
