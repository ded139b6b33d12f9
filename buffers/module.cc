// placeholder until the buffers module lands; replaced by its first source.
