package dev.gatun.cuda;

/**
 * What a registry name currently refers to.
 *
 * @param name the registry name
 * @param kind the image kind loaded
 * @param artifact where the image came from
 * @param sha256 hex SHA-256 of the image
 * @param generation how many images this name has had (1 for the first load)
 */
public record ModuleInfo(String name, ModuleImage.Kind kind, String artifact, String sha256, long generation) {
}
