// Plain JavaScript importing the package by its name (dist/, as users run it).
import { defineHandler } from 'durable-worker';
import { callDependency } from './_call.mjs';

/** The handler whose dependency goes down (bench/outage/isolation.ts). */
export default defineHandler({
  type: ['iso.b', 'iso.ab'],
  handle: (event, ctx) => callDependency('flaky', event, ctx.signal),
});
