package ownership

// SetAfterStep installs the test hook that runs after each transfer step
// ("fencing", "fenced"); an error stops the mover there.
func (d *Directory) SetAfterStep(f func(step string) error) { d.afterStep = f }
