CREATE TABLE `live_outputs` (
	`id` text PRIMARY KEY NOT NULL,
	`stream_id` text NOT NULL,
	`org_id` text NOT NULL,
	`name` text,
	`url` text NOT NULL,
	`sealed_target` text NOT NULL,
	`status` text NOT NULL,
	`bytes_sent` integer NOT NULL,
	`started_at` integer,
	`last_error` text,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `live_outputs_stream` ON `live_outputs` (`stream_id`,`created_at`);