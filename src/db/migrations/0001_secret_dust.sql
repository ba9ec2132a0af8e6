CREATE TABLE `jobs` (
	`id` text PRIMARY KEY NOT NULL,
	`type` text NOT NULL,
	`org_id` text NOT NULL,
	`entity_id` text NOT NULL,
	`payload` text NOT NULL,
	`status` text NOT NULL,
	`attempts` integer NOT NULL,
	`max_attempts` integer NOT NULL,
	`claimed_by` text,
	`lease_until` integer,
	`run_after` integer NOT NULL,
	`last_error` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `jobs_claim` ON `jobs` (`status`,`run_after`);--> statement-breakpoint
CREATE INDEX `jobs_entity` ON `jobs` (`entity_id`);--> statement-breakpoint
CREATE TABLE `uploads` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`status` text NOT NULL,
	`expires_at` integer NOT NULL,
	`max_bytes` integer NOT NULL,
	`size_bytes` integer,
	`created_at` integer NOT NULL
);
