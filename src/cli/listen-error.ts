/**
 * Why a server could not listen, in one line a user can act on: a busy port or a host that is not
 * an address of this machine is a mistake in the command, not a crash, so no stack.
 */
const CAUSES: Record<string, (host: string) => string> = {
  EADDRINUSE: () => `the port is already in use (another server running?); pick another with --port N (0 = any free port)`,
  EACCES: () => `no permission to use this port (ports below 1024 need privileges); pick another with --port N`,
  EADDRNOTAVAIL: () => `the host is not an address of this machine; pick one with --host (127.0.0.1 for this machine only, 0.0.0.0 for every interface)`,
  ENOTFOUND: (host) => `"${host}" is neither an IP address nor a name that resolves; pick one with --host (127.0.0.1 for this machine only, 0.0.0.0 for every interface)`,
  EAI_AGAIN: (host) => `"${host}" could not be resolved (name lookup failed); give an IP address with --host`,
  EAI_FAIL: (host) => `"${host}" could not be resolved; give an IP address with --host`,
};

/** The one-line message for a listen failure, or undefined when it is not one we can explain. */
export function listenErrorMessage(err: unknown, host: string, port: number): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  const cause = typeof code === "string" ? CAUSES[code] : undefined;
  return cause ? `cannot listen on ${host}:${port}: ${cause(host)}` : undefined;
}
