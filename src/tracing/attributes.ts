/**
 * Span names and attributes: the OpenTelemetry messaging semantic conventions (`messaging.*`), the
 * CloudEvents ones (`cloudevents.*`) where they name an event attribute, and `durable_worker.*` for
 * what the platform has and the conventions do not (sequence, lease, generation, attempt, handler,
 * outcome). Strings, not @opentelemetry/semantic-conventions: its messaging names are still in the
 * incubating entry point, which is not a stable import.
 */

/** `messaging.system`: the platform's durable consumers, as no registered value names them. */
export const MESSAGING_SYSTEM = 'data_platform';

export const ATTR = {
  system: 'messaging.system',
  operationType: 'messaging.operation.type',
  operationName: 'messaging.operation.name',
  destination: 'messaging.destination.name',
  consumerGroup: 'messaging.consumer.group.name',
  clientId: 'messaging.client.id',
  messageId: 'messaging.message.id',
  batchCount: 'messaging.batch.message_count',
  eventType: 'cloudevents.event_type',
  eventSubject: 'cloudevents.event_subject',
  errorType: 'error.type',
  sequence: 'durable_worker.event.sequence',
  leaseId: 'durable_worker.lease.id',
  generation: 'durable_worker.lease.generation',
  attempt: 'durable_worker.delivery.attempt',
  handler: 'durable_worker.handler',
  outcome: 'durable_worker.outcome',
  ackSent: 'durable_worker.ack.sent',
  ackResult: 'durable_worker.ack.result',
} as const;

/** The convention's span name: `{operation} {destination}`. */
export function spanName(operation: 'receive' | 'process' | 'settle', destination: string): string {
  return `${operation} ${destination}`;
}
