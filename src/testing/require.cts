/** The `require` entry of `durable-worker/testing`: the ES build, as for the package root (../require.cts). */
import testing = require('./index.js');
export = testing;
