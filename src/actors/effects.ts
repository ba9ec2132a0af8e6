import type { DomainEvent, MachineEffect, MessageEffect, WorkEffect } from "../../machines/contracts.ts";

/** A delayed event of the actor's own (`after`, delayed `raise`). */
export interface DelayedEvent {
  sendId: string;
  event: { type: string };
  delayMs: number;
}

/** Everything a transition asks for besides its new state; the runtime writes each as a row. */
export interface Effects {
  domain: DomainEvent[];
  work: WorkEffect[];
  messages: MessageEffect["message"][];
  timers: DelayedEvent[];
  /** Send ids of timers to cancel. */
  cancels: string[];
}

interface Action {
  type: string;
  params?: unknown;
}

/**
 * Reads the actions XState's pure `transition()` returned. Emitted effects are
 * the machine's own requests; `xstate.raise` with a delay and `xstate.cancel`
 * are XState's timers (an undelayed raise was already processed inside the
 * transition). Anything else (assign, enqueueActions) has no outside effect.
 */
export function effectsOf(actions: readonly Action[]): Effects {
  const out: Effects = { domain: [], work: [], messages: [], timers: [], cancels: [] };
  for (const a of actions) {
    if (a.type === "xstate.emit") {
      const e = (a.params as { event: MachineEffect }).event;
      if (e.type === "domain") out.domain.push(e);
      else if (e.type === "work") out.work.push(e);
      else if (e.type === "message") out.messages.push(e.message);
    } else if (a.type === "xstate.raise") {
      const p = a.params as { event: { type: string }; id?: string; delay?: number };
      if (p.delay === undefined) continue;
      out.timers.push({ sendId: p.id ?? p.event.type, event: p.event, delayMs: p.delay });
    } else if (a.type === "xstate.cancel") {
      out.cancels.push((a.params as { sendId: string }).sendId);
    }
  }
  return out;
}

export const hasEffects = (e: Effects) => e.domain.length + e.work.length + e.messages.length + e.timers.length + e.cancels.length > 0;
