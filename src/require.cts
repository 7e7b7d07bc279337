/**
 * The `require` entry of `durable-worker`: CommonJS callers get the ES build itself (Node >= 22.12
 * loads an ES module through `require()`), so both kinds of caller share one copy of every class and
 * registry. This file only gives CommonJS-typed callers declarations of the CommonJS format.
 */
import durableWorker = require('./index.js');
export = durableWorker;
