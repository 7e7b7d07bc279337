import { describe, expect, it, vi } from 'vitest';
import { ConsumerWatch } from '../../src/console/consumer-watch.js';
import type { EmulatorStateSummary } from '../../src/emulator/summary.js';

/** The emulator's state with one consumer, paused or not. */
function stateWith(paused: boolean): EmulatorStateSummary {
  return {
    tenants: [
      {
        id: 't',
        head: null,
        retainedEvents: 0,
        sources: [],
        destinations: [],
        consumers: [{ id: 'd', paused, head: null, committed: null, leased: 0, pendingRedelivery: 0, startedAfter: '0', leases: [] }],
      },
    ],
    faults: {},
  };
}

describe('ConsumerWatch.sample', () => {
  it('asked for while another sample is on its way, reads the state again once that one is answered', async () => {
    let paused = false;
    /** Answers of the reads started so far, each with the state as it was when its read started. */
    const answers: (() => void)[] = [];
    const watch = new ConsumerWatch({
      destination: 'd',
      tenant: 't',
      onSample: () => {},
      readState: () => {
        const state = stateWith(paused);
        return new Promise((resolve) => answers.push(() => resolve(state)));
      },
    });
    // The periodic sample reads the state, then the page pauses the consumer and asks for a sample.
    const periodic = watch.sample();
    paused = true;
    const afterPause = watch.sample();
    expect(answers).toHaveLength(1);
    answers[0]!();
    expect((await periodic).paused).toBe(false);
    await vi.waitFor(() => expect(answers).toHaveLength(2));
    answers[1]!();
    expect((await afterPause).paused).toBe(true);
    expect(watch.latest.paused).toBe(true);
  });
});
