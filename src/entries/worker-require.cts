/** The `require` entry of `durable-worker/worker`: the ES build, as for the package root (../require.cts). */
import room = require('./worker.js');
export = room;
