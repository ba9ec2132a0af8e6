ALTER TABLE `webhook_deliveries` ADD `claimed_by` text;--> statement-breakpoint
ALTER TABLE `webhook_deliveries` ADD `lease_until` integer;