// A Workers KV persistence layer for Powertools idempotency, written the
// way its docs describe a custom layer: the four record operations. KV has
// no conditional write, so "put if absent" is a read then a write.
import {
  IdempotencyItemAlreadyExistsError,
  IdempotencyItemNotFoundError,
  IdempotencyRecordStatus,
} from "@aws-lambda-powertools/idempotency";
import { BasePersistenceLayer, IdempotencyRecord } from "@aws-lambda-powertools/idempotency/persistence";

const KV_MIN_TTL_SECS = 60;

export class KvPersistenceLayer extends BasePersistenceLayer {
  constructor(private readonly kv: () => KVNamespace) {
    super();
  }

  protected async _getRecord(idempotencyKey: string): Promise<IdempotencyRecord> {
    const found = await this.kv().get<Record<string, unknown>>(idempotencyKey, "json");
    if (!found) throw new IdempotencyItemNotFoundError(`no record for ${idempotencyKey}`);
    return new IdempotencyRecord(found as never);
  }

  protected async _putRecord(record: IdempotencyRecord): Promise<void> {
    const found = await this.kv().get<Record<string, unknown>>(record.idempotencyKey, "json");
    if (found) {
      const existing = new IdempotencyRecord(found as never);
      const inProgressExpired =
        existing.getStatus() === IdempotencyRecordStatus.INPROGRESS &&
        existing.inProgressExpiryTimestamp !== undefined &&
        existing.inProgressExpiryTimestamp < Date.now();
      if (existing.getStatus() !== IdempotencyRecordStatus.EXPIRED && !inProgressExpired) {
        throw new IdempotencyItemAlreadyExistsError(`record exists for ${record.idempotencyKey}`, existing);
      }
    }
    await this.write(record);
  }

  protected async _updateRecord(record: IdempotencyRecord): Promise<void> {
    await this.write(record);
  }

  protected async _deleteRecord(record: IdempotencyRecord): Promise<void> {
    await this.kv().delete(record.idempotencyKey);
  }

  private write(record: IdempotencyRecord): Promise<void> {
    const ttl = Math.max(KV_MIN_TTL_SECS, Math.ceil((record.expiryTimestamp ?? 0) - Date.now() / 1000));
    return this.kv().put(record.idempotencyKey, JSON.stringify(record), { expirationTtl: ttl });
  }
}
