CREATE TABLE `drm_keys` (
	`video_id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`key_id` text NOT NULL,
	`sealed_key` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `drm_keys_key_id` ON `drm_keys` (`key_id`);