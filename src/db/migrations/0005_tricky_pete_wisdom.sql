CREATE TABLE `stream_key_digests` (
	`digest` text PRIMARY KEY NOT NULL,
	`stream_id` text NOT NULL,
	`org_id` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `stream_key_digests_stream` ON `stream_key_digests` (`stream_id`);