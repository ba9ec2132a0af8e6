/** What a machine emits for the outbox: an event name of spec section 6 and its `data`. */
export interface DomainEvent {
  type: "domain";
  event: string;
  data: Record<string, unknown>;
}
