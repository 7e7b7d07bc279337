/** The `require` entry of `durable-worker/client`: the ES build, as for the package root (../require.cts). */
import room = require('./client.js');
export = room;
