CREATE TABLE `stream_keys` (
	`stream_key` text PRIMARY KEY NOT NULL,
	`stream_id` text NOT NULL,
	`org_id` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `stream_keys_stream` ON `stream_keys` (`stream_id`);