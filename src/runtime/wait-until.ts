/**
 * Waits for `promise`, but no longer than `timeoutMs`: resolves when it does or when the time is up,
 * rejects when it rejects first. Leaves no timer behind either way.
 */
export async function waitUntil(promise: Promise<unknown>, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, timeoutMs))))]);
  } finally {
    clearTimeout(timer);
  }
}
