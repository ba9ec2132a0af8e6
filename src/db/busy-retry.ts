import type { Client, InStatement, ResultSet, Transaction, TransactionMode } from "@libsql/client";

/**
 * The writer client with a `transaction()` whose start is retried while the
 * database is busy, so a write transaction never fails only because another
 * process held the write lock when it began.
 *
 * Why: on a libSQL server (sqld), a transaction's `BEGIN IMMEDIATE` travels
 * with its first statement, and under three writer processes it sometimes
 * answered `SQLITE_BUSY: database is locked` at once instead of waiting
 * (test/sqld-multi-writer.test.ts, about one run in ten, before this). A
 * failure there is safe to retry: nothing of the transaction ran yet, and
 * no code of the caller's ran past its first statement. So the first
 * statement (BEGIN included) is re-sent on a fresh transaction, invisibly
 * to the caller; a busy error after it (the transaction held the lock) is
 * not retried, it reaches the caller as before.
 *
 * Not for `file:` databases (create-database.ts does not wrap them): the
 * busy timeout already waits there, and the local client leaves a BEGIN that
 * failed busy "in progress" on its connection, so a transaction begun again
 * on it cannot commit ("cannot commit transaction - SQL statements in
 * progress", measured).
 */
export function withBusyRetry(client: Client, opts: { attempts?: number; onRetry?: (attempt: number, err: unknown) => void } = {}): Client {
  const attempts = opts.attempts ?? 50;
  const transaction = (mode: TransactionMode = "write"): Promise<Transaction> => Promise.resolve(retryingTransaction(client, mode, attempts, opts.onRetry));
  return new Proxy(client, {
    get(target, prop) {
      if (prop === "transaction") return transaction;
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

export function isBusy(err: unknown): boolean {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (typeof e.code === "string" && e.code.startsWith("SQLITE_BUSY")) return true;
  }
  return false;
}

/** 1, 2, 4 … 32 ms, with jitter so retrying processes do not march in step. */
const backoff = (attempt: number) => Math.min(32, 2 ** attempt) * (0.5 + Math.random());

function retryingTransaction(client: Client, mode: TransactionMode, attempts: number, onRetry?: (attempt: number, err: unknown) => void): Transaction {
  let tx: Transaction | null = null;
  let started = false;

  /** Runs the transaction's first request (its BEGIN goes with it), again on a fresh transaction while busy. */
  async function first<T>(run: (t: Transaction) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        tx ??= await client.transaction(mode);
        const out = await run(tx);
        started = true;
        return out;
      } catch (err) {
        if (!isBusy(err) || attempt >= attempts) {
          started = true;
          throw err;
        }
        tx?.close();
        tx = null;
        onRetry?.(attempt, err);
        await Bun.sleep(backoff(attempt));
      }
    }
  }

  return {
    execute: (stmt: InStatement): Promise<ResultSet> => (started ? tx!.execute(stmt) : first((t) => t.execute(stmt))),
    batch: (stmts: InStatement[]): Promise<ResultSet[]> => (started ? tx!.batch(stmts) : first((t) => t.batch(stmts))),
    executeMultiple: (sql: string): Promise<void> => (started ? tx!.executeMultiple(sql) : first((t) => t.executeMultiple(sql))),
    // A transaction that never ran a statement has nothing to commit or roll back.
    commit: async () => {
      if (tx) await tx.commit();
    },
    rollback: async () => {
      if (tx) await tx.rollback();
    },
    close: () => tx?.close(),
    get closed() {
      return tx?.closed ?? started;
    },
  } as Transaction;
}
