/** The `require` entry of `durable-worker/emulator`: the ES build, as for the package root (../require.cts). */
import room = require('./emulator.js');
export = room;
