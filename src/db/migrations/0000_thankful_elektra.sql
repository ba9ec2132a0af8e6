CREATE TABLE `actors` (
	`id` text PRIMARY KEY NOT NULL,
	`kind` text NOT NULL,
	`org_id` text NOT NULL,
	`status` text NOT NULL,
	`state` text NOT NULL,
	`dedupe_key` text,
	`version` integer NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`deleted_at` integer
);
--> statement-breakpoint
CREATE INDEX `actors_org_kind_created` ON `actors` (`org_id`,`kind`,`created_at`,`id`);--> statement-breakpoint
CREATE UNIQUE INDEX `actors_dedupe` ON `actors` (`org_id`,`kind`,`dedupe_key`) WHERE dedupe_key IS NOT NULL AND deleted_at IS NULL;--> statement-breakpoint
CREATE TABLE `api_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`prefix` text NOT NULL,
	`secret_hash` text NOT NULL,
	`name` text NOT NULL,
	`created_at` integer NOT NULL,
	`revoked_at` integer,
	`expires_at` integer,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_prefix` ON `api_keys` (`prefix`);--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_one_live_per_org` ON `api_keys` (`org_id`) WHERE revoked_at IS NULL;--> statement-breakpoint
CREATE TABLE `organizations` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`settings` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `outbox` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`id` text NOT NULL,
	`org_id` text NOT NULL,
	`entity_id` text NOT NULL,
	`event` text NOT NULL,
	`payload` text NOT NULL,
	`created_at` integer NOT NULL,
	`fanned_out_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `outbox_id` ON `outbox` (`id`);--> statement-breakpoint
CREATE INDEX `outbox_pending` ON `outbox` (`fanned_out_at`,`seq`);--> statement-breakpoint
CREATE TABLE `rate_limits` (
	`key` text PRIMARY KEY NOT NULL,
	`window_start` integer NOT NULL,
	`count` integer NOT NULL
);
