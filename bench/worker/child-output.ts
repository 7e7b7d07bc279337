/**
 * Waits until a child process's stdout (collected by the caller into a string) matches `pattern`
 * past `from`, polling; fails once the child exited without it or the time is up.
 */
export async function waitForOutput(
  output: () => string,
  pattern: RegExp,
  options: { from?: number; exited: () => boolean; timeoutMs?: number; child: string },
): Promise<RegExpExecArray> {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    const match = pattern.exec(output().slice(options.from ?? 0));
    if (match !== null) return match;
    if (Date.now() > deadline || options.exited()) throw new Error(`${options.child} never printed ${pattern}; its output:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
