CREATE TABLE `playback_access` (
	`token` text PRIMARY KEY NOT NULL,
	`asset_id` text NOT NULL,
	`org_id` text NOT NULL,
	`policy` text NOT NULL,
	`restriction_id` text,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `playback_restrictions` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`referrer` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `playback_restrictions_org` ON `playback_restrictions` (`org_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `signing_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`public_key` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `signing_keys_org` ON `signing_keys` (`org_id`,`created_at`);