// Plain JavaScript importing the package by its name (dist/, as users run it).
import { defineHandler } from 'durable-worker';
import { callDependency } from './_call.mjs';

/** The handler whose dependency stays up (bench/outage/isolation.ts). */
export default defineHandler({
  type: ['iso.a', 'iso.ab'],
  handle: (event, ctx) => callDependency('healthy', event, ctx.signal),
});
