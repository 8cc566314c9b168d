"""What the tests share: builders, fakes, fault injection, the moto world's resources, readers of
synthesized templates. Test modules import these from here, never from one another or a conftest."""
