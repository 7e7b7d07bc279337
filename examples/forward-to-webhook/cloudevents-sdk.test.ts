/**
 * What an app written with the official CloudEvents SDK (`cloudevents` 10) receives from the
 * forwarding handler, in both content modes, for subjects that need percent-encoding in a header.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { withEmulator } from 'durable-worker/testing';
import { startSdkApp, type SdkApp } from './sdk-app.js';

/** Subjects the HTTP binding percent-encodes in binary mode: space, `"`, `%`, control and non-ASCII characters. */
const ENCODED = ['a b', 'say "hi"', '100%', '50% off', 'Müller', 'café au lait', '東京', 'rocket 🚀', 'tab\there'];
/** Printable ASCII other than those: sent as they are. */
const PLAIN = [
  'entry-1',
  'SKU_42',
  'a/b/c',
  'ns:item',
  'a+b',
  "o'neil",
  'x,y',
  'k=v',
  'semi;colon',
  'tilde~',
  'hash#1',
  'q?x',
  'at@host',
  'star*',
  'paren(1)',
  'bracket[2]',
  'brace{3}',
  'pipe|x',
  'caret^',
  'back`tick',
  'excl!',
  'dollar$',
  'amp&',
  'lt<gt>',
  'back\\slash',
  'dot.dot',
  'UPPER',
  '0',
  '9999999999999999999',
];
while (PLAIN.length < 41) PLAIN.push(`plain-${PLAIN.length}`);
const SUBJECTS = [...PLAIN, ...ENCODED];

describe('examples/forward-to-webhook with the CloudEvents SDK', () => {
  let app: SdkApp;
  beforeEach(async () => {
    app = await startSdkApp();
  });
  afterEach(async () => {
    await app.close();
  });

  /** Forwards one event per subject in `mode`; returns, per sent subject, what the app read. */
  async function forward(mode: 'binary' | 'structured') {
    return withEmulator({ worker: { forwardUrl: `${app.url}/events`, forwardMode: mode } }, async (env) => {
      const sent = env.append(SUBJECTS.map((subject, i) => ({ type: 'sdk.check', subject, data: { i, subject } })));
      const settled = await env.waitForSettled(SUBJECTS.length);
      expect(settled.every((o) => o.outcome === 'ok')).toBe(true);
      return sent.map((event) => {
        const got = app.received.find((r) => r.sdk.id === event.id);
        expect(got, event.subject).toBeDefined();
        return { event, sdk: got!.sdk, decoded: got!.decoded };
      });
    });
  }

  it('binary mode: the SDK leaves the 9 of 50 subjects that needed encoding percent-encoded; decoding the ce-* values gives every one back', async () => {
    expect(SUBJECTS).toHaveLength(50);
    const results = await forward('binary');
    const wrong = results.filter((r) => r.sdk.subject !== r.event.subject);
    expect(wrong.map((r) => r.event.subject).sort()).toEqual([...ENCODED].sort());
    for (const { event, sdk } of wrong) {
      expect(sdk.subject).toMatch(/%[0-9A-F]{2}/);
      expect(decodeURIComponent(sdk.subject!)).toBe(event.subject);
    }
    expect(wrong.find((r) => r.event.subject === 'Müller')!.sdk.subject).toBe('M%C3%BCller');
    // The app's receiveCloudEvent (sdk-app.ts) decodes: every attribute as sent, data untouched.
    for (const { event, decoded } of results) {
      expect({ id: decoded.id, type: decoded.type, subject: decoded.subject, sequence: decoded.sequence, data: decoded.data }).toEqual({
        id: event.id,
        type: event.type,
        subject: event.subject,
        sequence: event.sequence,
        data: event.data,
      });
    }
  });

  it('structured mode: the SDK reads every subject as sent, with no decoding', async () => {
    const results = await forward('structured');
    for (const { event, sdk, decoded } of results) {
      expect(sdk.subject).toBe(event.subject);
      expect(sdk.sequence).toBe(event.sequence);
      expect(sdk.data).toEqual(event.data);
      // receiveCloudEvent leaves structured requests alone: '100%' would not survive decodeURIComponent.
      expect(decoded.subject).toBe(event.subject);
    }
  });
});
