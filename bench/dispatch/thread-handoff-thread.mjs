/** The thread of bench/dispatch/thread-handoff.mjs: reads each event it was given (a clone, or its slice of the shared text), answers with a count per message. */
import { parentPort, workerData } from 'node:worker_threads';

// Each event is read (a field used), so that neither way's work can be skipped.
let read = 0;
parentPort.on('message', (message) => {
  if (workerData.way === 'clone') {
    for (const event of message.events) read += event.subject.length;
  } else {
    const text = Buffer.from(message.text);
    for (let i = 0; i < message.starts.length; i++) read += JSON.parse(text.toString('latin1', message.starts[i], message.ends[i])).subject.length;
  }
  parentPort.postMessage(message.handlers.length);
});
